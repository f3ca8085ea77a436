"""How rqconc finds its Redis: explicit > REDIS_URL > the embedded server (SPEC section 6).

STUB: the connection helper is filling this in; the signatures below are the contract.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Optional, Union
from urllib.parse import urlsplit, urlunsplit

import redis

from rqconc import errors

ConnectionLike = Union[str, redis.Redis, None]


def redact(url: str) -> str:
    """The URL with any password replaced by '***' (safe to log or show)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))


def resolve_url(connection: Optional[str] = None) -> str:
    """The URL to use: the explicit one, else REDIS_URL, else the embedded server's."""
    if connection:
        return connection
    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"]
    raise NotImplementedError("embedded server: coming")


def connect(connection: ConnectionLike = None) -> redis.Redis:
    """A client for `connection` (URL, client, or None for the precedence of section 6)."""
    if isinstance(connection, redis.Redis):
        return connection
    return redis.Redis.from_url(resolve_url(connection))


def describe(client: redis.Redis) -> str:
    """A printable, password-free name of the server this client talks to."""
    kwargs = client.connection_pool.connection_kwargs
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}"
    return f"redis://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


@contextmanager
def translated_errors(client: redis.Redis) -> Iterator[None]:
    """Turn redis-py's connection failures into rqconc.ConnectionError naming the server."""
    try:
        yield
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise errors.ConnectionError(
            f"cannot reach Redis at {describe(client)}: {exc.__class__.__name__}; "
            "check that it runs and that --url / REDIS_URL is right") from None
