"""How rqconc finds its Redis: explicit > REDIS_URL > the embedded server (SPEC section 6).

Every client rqconc builds from a URL gets the same socket options (`client_options`): a
bounded connect, no read timeout (blocking commands wait as long as they asked to), TCP
keepalive so a vanished server is noticed even while we block, and a short retry.
"""

from __future__ import annotations

import os
import re
import socket
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Optional, Union
from urllib.parse import quote

import redis
from redis.backoff import EqualJitterBackoff
from redis.retry import Retry

from rqconc import errors
from rqconc.connection import embedded

ConnectionLike = Union[str, redis.Redis, None]

SCHEMES = ("redis://", "rediss://", "unix://")
CONNECT_TIMEOUT = 3.0
HEALTH_CHECK_INTERVAL = 15
# With socket_timeout=None a read on a half-open TCP connection would wait forever: keepalive
# probes (10 s idle, then 3 probes 5 s apart) end it within ~25 s, and TCP_USER_TIMEOUT bounds
# the case keepalive does not cover (data sent but never acknowledged).
KEEPALIVE = {"TCP_KEEPIDLE": 10, "TCP_KEEPINTVL": 5, "TCP_KEEPCNT": 3, "TCP_USER_TIMEOUT": 30_000}

_QUERY_PASSWORD = re.compile(r"(?i)([?&]password=)[^&#]*")


def redact(url: str) -> str:
    """The URL with any password replaced by '***' (safe to log or show)."""
    # Plain string surgery rather than urlsplit: it must never raise, even on a malformed
    # URL (say an unclosed IPv6 bracket), since it is what error messages are built from.
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = len(rest)
    for stop in "/?#":
        index = rest.find(stop)
        if index != -1:
            end = min(end, index)
    netloc, tail = rest[:end], rest[end:]
    userinfo, at, hostport = netloc.rpartition("@")
    if not at:
        if "@" in rest and scheme.lower() != "unix":
            # A password holding an unescaped "/", "?" or "#": hide all up to the last "@".
            return f"{scheme}://***@{rest.rpartition('@')[2]}"
        return url
    user, colon, _password = userinfo.partition(":")
    if not colon:  # "redis://secret@host": some clients read a lone name as the password
        return f"{scheme}://***@{hostport}{tail}"
    return f"{scheme}://{user}:***@{hostport}{tail}"


def resolve_url(connection: Optional[str] = None) -> str:
    """The URL to use: the explicit one, else REDIS_URL, else the embedded server's."""
    if connection:
        return connection
    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"]
    return embedded.ensure_running()


class _TransientRetry(Retry):
    """redis-py's Retry, minus retrying bad credentials: that cannot succeed, only delay the
    clear error (AuthenticationError subclasses ConnectionError, which is retried)."""

    def call_with_retry(
        self, do: Callable[[], Any], fail: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> Any:
        def fail_fast(error: Exception, *more: Any) -> Any:
            outcome = fail(error, *more)
            if isinstance(error, redis.exceptions.AuthenticationError):
                raise error  # out of the retry loop, after redis-py's own clean-up
            return outcome

        return super().call_with_retry(do, fail_fast, *args, **kwargs)


def client_options(url: str) -> Dict[str, Any]:
    """Keyword arguments rqconc gives `redis.Redis.from_url` (query options in `url` win)."""
    options: Dict[str, Any] = {
        "socket_connect_timeout": CONNECT_TIMEOUT,
        # None, not a number: blocking commands (BZPOPMIN, BLPOP in job.get) wait longer
        # than any fixed read timeout, and redis-py does not stretch it for them.
        "socket_timeout": None,
        "health_check_interval": HEALTH_CHECK_INTERVAL,
        # Rides over a server restart or a dropped idle connection; anything longer is the
        # caller's business (workers back off by connection/backoff.py).
        "retry": _TransientRetry(EqualJitterBackoff(cap=0.5, base=0.05), 2),
    }
    if not url.startswith("unix://"):  # unix sockets take no TCP options
        options["socket_keepalive"] = True
        options["socket_keepalive_options"] = {
            getattr(socket, name): value
            for name, value in KEEPALIVE.items()
            if hasattr(socket, name)
        }
    return options


def connect(connection: ConnectionLike = None) -> redis.Redis:
    """A client for `connection` (URL, client, or None for the precedence of section 6).

    A client passed in is used as it is. Nothing is sent to Redis here: the first command
    connects (so a client made before a fork is safe to use after it).
    """
    if isinstance(connection, redis.Redis):
        return connection
    if connection is not None and not isinstance(connection, str):
        raise TypeError(
            f"connection must be a Redis URL or a redis.Redis client, "
            f"not {type(connection).__name__}"
        )
    url = resolve_url(connection)
    if not url.startswith(SCHEMES):
        raise ValueError(
            f"invalid Redis URL {redact(url)!r}: it must start with {', '.join(SCHEMES)}"
        )
    if _unescaped_userinfo(url):
        raise ValueError(f"invalid Redis URL {redact(url)!r}: {_ESCAPE_HINT}")
    try:
        return redis.Redis.from_url(url, **client_options(url))
    except ValueError:
        # Never quote redis-py's message: it names what it misread, which may be a piece of
        # the password (as the "port" when the password holds "/", "?" or "#").
        raise ValueError(f"invalid Redis URL {redact(url)!r}: {_ESCAPE_HINT}") from None


_ESCAPE_HINT = (
    "it cannot be read as redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]; a user or password "
    'holding "/", "?", "#" or "@" must be percent-encoded (%2F, %3F, %23, %40)'
)


def _unescaped_userinfo(url: str) -> bool:
    """Whether a password holding "/", "?" or "#" cut the URL's authority short: an "@" after
    it, not inside a query option's value. redis-py would read that URL without an error
    when the password's start is digits (as the port), and connect to the wrong server."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() == "unix":
        return False
    cut = min((i for i in (rest.find(c) for c in "/?#") if i != -1), default=len(rest))
    before_at = rest[cut:].rpartition("@")[0]
    return "@" not in rest[:cut] and bool(before_at) and "=" not in before_at


def describe(client: redis.Redis) -> str:
    """A printable, password-free name of the server this client talks to."""
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if kwargs is None:
        return f"Redis ({type(client).__name__})"
    # A user without a password may be a password written as "redis://secret@host": hidden.
    show_user = kwargs.get("username") and kwargs.get("password")
    user = f"{quote(kwargs['username'], safe='')}@" if show_user else ""
    db = kwargs.get("db") or 0
    if kwargs.get("path"):
        query = f"?db={db}" if db else ""
        return f"unix://{user}{quote(kwargs['path'])}{query}"
    connection_class = getattr(pool, "connection_class", None)
    is_tls = isinstance(connection_class, type) and issubclass(
        connection_class, redis.SSLConnection
    )
    host = kwargs.get("host", "localhost")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{'rediss' if is_tls else 'redis'}://{user}{host}:{kwargs.get('port', 6379)}/{db}"


def _scrubbed(text: str, client: redis.Redis) -> str:
    """`text` without the client's password, should a server or library ever echo it."""
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    password = kwargs.get("password")
    if password and password in text:
        text = text.replace(password, "***")
    return text


@contextmanager
def translated_errors(client: redis.Redis) -> Iterator[None]:
    """Turn redis-py's connection failures into rqconc.ConnectionError naming the server."""
    try:
        yield
    except redis.exceptions.AuthenticationError as exc:
        kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
        if kwargs.get("password"):
            problem = f"refused the credentials ({exc}); check the user and password"
        else:  # the server's reply (NOAUTH, or HELLO's complaint) would only puzzle
            problem = "requires a password; give it as redis://[USER]:PASSWORD@HOST:PORT/DB"
        raise errors.ConnectionError(
            _scrubbed(f"Redis at {describe(client)} {problem} in --url / REDIS_URL", client)
        ) from None
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        raise errors.ConnectionError(
            _scrubbed(
                f"cannot reach Redis at {describe(client)} ({exc.__class__.__name__}: {exc}); "
                "check that it runs and that --url / REDIS_URL is right",
                client,
            )
        ) from None
