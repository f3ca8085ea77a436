"""How rqconc finds its Redis: explicit > REDIS_URL > the embedded server (SPEC section 6).

Every client rqconc builds from a URL gets the same socket options (`client_options`): a
bounded connect, no read timeout (blocking commands wait as long as they asked to), TCP
keepalive so a vanished server is noticed even while we block, and a short retry.
"""

from __future__ import annotations

import os
import re
import socket
from typing import Any, Callable, Dict, Optional, Union
from urllib.parse import quote

import redis
from redis.backoff import EqualJitterBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from rqconc import errors
from rqconc.connection import cluster, embedded, sentinel
from rqconc.connection.replicas import ReplicasBehind

ConnectionLike = Union[str, redis.Redis, RedisCluster, None]

SCHEMES = ("redis://", "rediss://", "unix://", *cluster.SCHEMES, *sentinel.SCHEMES)
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
    if isinstance(connection, redis.Redis) or cluster.is_cluster(connection):
        return connection  # type: ignore[return-value]
    if connection is not None and not isinstance(connection, str):
        raise TypeError(
            f"connection must be a Redis URL, a redis.Redis or a redis.cluster.RedisCluster "
            f"client, not {type(connection).__name__}"
        )
    url = checked_url(resolve_url(connection))
    if cluster.is_cluster_url(url):
        return _connect_cluster(url)
    try:
        if sentinel.is_sentinel_url(url):
            client = sentinel.connect(url, client_options(url))
        else:
            client = redis.Redis.from_url(url, **client_options(url))
    except ValueError:
        if sentinel.is_sentinel_url(url):
            raise ValueError(f"invalid Redis URL {redact(url)!r}: {sentinel.URL_SHAPE}") from None
        # Never quote redis-py's message: it names what it misread, which may be a piece of
        # the password (as the "port" when the password holds "/", "?" or "#").
        raise ValueError(f"invalid Redis URL {redact(url)!r}: {_ESCAPE_HINT}") from None
    _check_tls_options(client, url)
    return client


def checked_url(url: str) -> str:
    """`url`, or ValueError (never naming the password) when it is not a Redis URL."""
    if not url.startswith(SCHEMES):
        raise ValueError(
            f"invalid Redis URL {redact(url)!r}: it must start with {', '.join(SCHEMES)}"
        )
    if _unescaped_userinfo(url):
        raise ValueError(f"invalid Redis URL {redact(url)!r}: {_ESCAPE_HINT}")
    return url


def _check_tls_options(client: redis.Redis, url: str) -> None:
    """A bad TLS option (`?ssl_cert_reqs=bogus`) surfaces only when redis-py builds its first
    connection, deep in a worker: build one now (it connects to nothing) to refuse it here."""
    pool = client.connection_pool
    if not issubclass(pool.connection_class, redis.SSLConnection):
        return
    try:
        pool.connection_class(**pool.connection_kwargs)
    except (redis.exceptions.RedisError, ValueError, TypeError) as exc:
        problem = _scrubbed(str(exc), client)
        raise ValueError(f"invalid TLS options in Redis URL {redact(url)!r}: {problem}") from None


def _connect_cluster(url: str) -> redis.Redis:
    try:
        seeds_options = client_options(url)
        client = cluster.connect(url, seeds_options, seeds_options["retry"])
    except ValueError as exc:  # cluster.parse_url's message never quotes the URL
        raise ValueError(f"invalid Redis URL {redact(url)!r}: {exc}") from None
    return client  # type: ignore[return-value]


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
    if cluster.is_cluster(client):
        return cluster.describe(client)
    managed = sentinel.describe(client) if hasattr(client, "connection_pool") else None
    if managed is not None:
        return managed
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
    password = _kwargs(client).get("password")
    if password and password in text:
        text = text.replace(password, "***")
    return text


def connection_kwargs(client: redis.Redis) -> Dict[str, Any]:
    """The options of the client's connections (a cluster's: those of every node)."""
    return _kwargs(client)


def _kwargs(client: redis.Redis) -> Dict[str, Any]:
    if cluster.is_cluster(client):
        return cluster.connection_kwargs(client)
    return getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})


# A cluster between losing a master and promoting its replica (or with no node reachable).
CLUSTER_DOWN = (
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    redis.exceptions.RedisClusterException,
)

# redis-py's own message when a pool with max_connections has none left (a ConnectionError).
_POOL_FULL = "Too many connections"


def settings_error(client: redis.Redis, exc: Exception) -> Optional[errors.ConfigurationError]:
    """The ConfigurationError `exc` stands for when no retry can fix it (bad credentials, a DB
    index the server lacks), else None."""
    if isinstance(exc, redis.exceptions.AuthenticationError):
        if _kwargs(client).get("password"):
            problem = f"refused the credentials ({exc}); check the user and password"
        else:  # the server's reply (NOAUTH, or HELLO's complaint) would only puzzle
            problem = "requires a password; give it as redis://[USER]:PASSWORD@HOST:PORT/DB"
    elif isinstance(exc, redis.exceptions.ResponseError) and "DB index" in str(exc):
        problem = f"has no database {_kwargs(client).get('db', 0)} ({exc}); check /DB"
    else:
        return None
    return errors.ConfigurationError(
        _scrubbed(f"Redis at {describe(client)} {problem} in --url / REDIS_URL", client)
    )


def check_settings(client: redis.Redis) -> None:
    """One PING: ConfigurationError when Redis refuses the client's settings, which a worker
    must not wait out; an unreachable Redis is left to the caller's retries."""
    try:
        client.ping()
    except (redis.exceptions.ConnectionError, redis.exceptions.ResponseError) as exc:
        error = settings_error(client, exc)
        if error is not None:
            raise error from None
    except redis.exceptions.TimeoutError:
        pass


class translated_errors:
    """`with translated_errors(client):` turns redis-py's connection failures into
    rqconc.ConnectionError naming the server (its ConfigurationError for settings no retry
    can fix). A class, not a generator: every enqueue enters one, and a generator-based
    context manager costs a generator and three calls more each time."""

    __slots__ = ("client",)

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Optional[BaseException], traceback: Any) -> None:
        # Returns None, never true: an exception it does not replace goes on as it is.
        if exc is not None:
            error = _translated(self.client, exc)
            if error is not None:
                raise error from None


def _translated(client: redis.Redis, exc: BaseException) -> Optional[BaseException]:
    """What translated_errors raises instead of `exc`, or None to raise `exc` itself."""
    if isinstance(exc, CLUSTER_DOWN):  # a failover in progress: an outage, as a dead server is
        return errors.ConnectionError(
            f"the Redis Cluster at {describe(client)} cannot serve the request now "
            f"({exc.__class__.__name__}: {cluster.first_line(exc)}); retry once it has a "
            "master for every slot"
        )
    if isinstance(exc, redis.exceptions.ResponseError):
        return settings_error(client, exc)
    if not isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)):
        return None
    if isinstance(exc, errors.ConnectionError):
        return None
    error = settings_error(client, exc)
    if error is not None:
        return error
    if isinstance(exc, ReplicasBehind):  # Redis is up: its replicas lag or are gone
        return errors.ConnectionError(f"Redis at {describe(client)}: {exc}")
    if isinstance(exc, redis.exceptions.MaxConnectionsError) or str(exc) == _POOL_FULL:
        return errors.ConnectionError(_pool_full(client))
    return errors.ConnectionError(
        _scrubbed(
            f"cannot reach Redis at {describe(client)} ({exc.__class__.__name__}: {exc}); "
            "check that it runs and that --url / REDIS_URL is right",
            client,
        )
    )


def _pool_full(client: Any) -> str:
    """Redis itself may be fine: the client's own cap on its connections is hit (a Cluster
    client's is per node, with no URL option: redis.asyncio's says MaxConnectionsError and
    nothing more)."""
    pool = getattr(client, "connection_pool", None)
    if pool is not None:
        cap = getattr(pool, "max_connections", "the")
        return (
            f"all {cap} connections of the client's pool to {describe(client)} are in "
            "use; raise ?max_connections= in --url / REDIS_URL or use fewer at once"
        )
    node = client.get_default_node() if hasattr(client, "get_default_node") else None
    cap = getattr(node, "max_connections", "the")
    return (
        f"all {cap} connections per node of the Redis Cluster client are in use; pass "
        "connection= a RedisCluster client with a larger max_connections, or use fewer at once"
    )
