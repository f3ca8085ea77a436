"""Redis Sentinel URLs (SPEC section 8): the sentinels' addresses and the monitored master's name.

    redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE_NAME[/DB][?OPTIONS]
    rediss+sentinel://...   (TLS to the data nodes)

The password is the data nodes' (the sentinels themselves are asked without one, unless
`?sentinel_password=` says otherwise). The client is redis-py's `Sentinel.master_for`: its
pool asks the sentinels for the master's address each time it opens a connection, and turns a
READONLY reply (a demoted master) into a ConnectionError that drops the connection. rqconc's
own direct connections are made from that pool's class and settings, so they find the
promoted master the same way when they reconnect.

Failover timing: SPEC promises that a client call fails within 15 s instead of hanging, so the
sentinels are asked with a short timeout, the data connections probe a silent peer sooner
than a single server's (`FAILOVER_KEEPALIVE`), and a reply may take at most
`WEDGED_MASTER_TIMEOUT`.
"""

from __future__ import annotations

import socket
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qsl, quote, unquote, urlencode

import redis
from redis.connection import parse_url
from redis.sentinel import Sentinel, SentinelConnectionPool

SCHEMES = ("redis+sentinel://", "rediss+sentinel://")
# How long one sentinel may take to answer "who is the master?" (s): a dead sentinel host must
# not hold a lookup that the other sentinels can answer at once.
SENTINEL_TIMEOUT = 1.0
# A silent master (a machine gone, no RST) is noticed within ~9 s: 5 s idle, 2 probes 2 s apart.
FAILOVER_KEEPALIVE = {"TCP_KEEPIDLE": 5, "TCP_KEEPINTVL": 2, "TCP_KEEPCNT": 2}
FAILOVER_USER_TIMEOUT_MS = 10_000

# A master that accepts connections but never answers (a wedged process, a frozen VM: its
# kernel still acknowledges every byte, so keepalive sees nothing wrong) is given up after
# this long, and the retry asks the sentinels again. Longer than any blocking call rqconc
# makes (a take waits at most 10 s; job.get and the event tail block in shorter chunks).
WEDGED_MASTER_TIMEOUT = 12.0

URL_SHAPE = (
    "redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE_NAME[/DB]; a user or "
    'password holding "/", "?", "#", "@" or "," must be percent-encoded'
)


class SentinelURL:
    """A parsed sentinel URL: where to ask, which master, and the data nodes' settings."""

    def __init__(self, url: str) -> None:
        scheme, _, rest = url.partition("://")
        self.tls = scheme.lower() == "rediss+sentinel"
        rest, _, query = rest.partition("?")
        userinfo, at, hosts_and_path = rest.rpartition("@")
        hosts, slash, path = hosts_and_path.partition("/")
        parts = [unquote(p) for p in path.split("/") if p] if slash else []
        if not hosts or not parts or len(parts) > 2:
            raise ValueError("no SERVICE_NAME")
        self.sentinels = [_host_port(item) for item in hosts.split(",")]
        self.service = parts[0]
        self.db = int(parts[1]) if len(parts) == 2 else 0
        options = dict(parse_qsl(query))
        self.sentinel_password = options.pop("sentinel_password", None)
        self.query = urlencode(options)
        self.userinfo = userinfo if at else ""

    def data_node_options(self) -> Dict[str, Any]:
        """redis-py's keyword arguments for the data nodes: credentials, DB, TLS and query
        options, read by redis-py's own URL parser from an equivalent single-node URL."""
        auth = f"{self.userinfo}@" if self.userinfo else ""
        query = f"?{self.query}" if self.query else ""
        single = f"{'rediss' if self.tls else 'redis'}://{auth}sentinel-master/{self.db}{query}"
        options = parse_url(single)
        for name in ("host", "port", "connection_class"):
            options.pop(name, None)
        if self.tls:
            options["ssl"] = True
        return options


def _host_port(item: str) -> Tuple[str, int]:
    host, colon, port = item.rpartition(":")
    if not colon or not host or not port.isdigit():
        raise ValueError(f"no HOST:PORT in {item!r}")
    return host.strip("[]"), int(port)


def is_sentinel_url(url: str) -> bool:
    return url.lower().startswith(SCHEMES)


def connect(url: str, socket_options: Dict[str, Any]) -> redis.Redis:
    """A client of the master `url` names; nothing is sent until its first command.
    Raises ValueError (never naming the password) for a URL that is not of that shape."""
    parsed = SentinelURL(url)
    manager = Sentinel(parsed.sentinels, sentinel_kwargs=sentinel_options(parsed))
    client = manager.master_for(parsed.service, **master_options(parsed, socket_options))
    client.connection_pool.rqconc_url = url
    return client


def master_options(parsed: SentinelURL, socket_options: Dict[str, Any]) -> Dict[str, Any]:
    """The master's client options (also rqconc.aio's, on redis.asyncio's Sentinel)."""
    options = {**socket_options, **parsed.data_node_options()}
    if options.get("socket_timeout") is None:
        options["socket_timeout"] = WEDGED_MASTER_TIMEOUT
    if socket_options.get("socket_keepalive"):
        options["socket_keepalive_options"] = _failover_keepalive()
    return options


def sentinel_options(parsed: SentinelURL) -> Dict[str, Any]:
    """The options of the connections to the sentinels themselves."""
    options: Dict[str, Any] = {
        "socket_connect_timeout": SENTINEL_TIMEOUT,
        "socket_timeout": SENTINEL_TIMEOUT,
    }
    if parsed.sentinel_password:
        options["password"] = parsed.sentinel_password
    return options


def _failover_keepalive() -> Dict[int, int]:
    values = dict(FAILOVER_KEEPALIVE, TCP_USER_TIMEOUT=FAILOVER_USER_TIMEOUT_MS)
    return {getattr(socket, n): v for n, v in values.items() if hasattr(socket, n)}


def url_of(client: redis.Redis) -> Optional[str]:
    """The sentinel URL a client of ours was made from (password included: for processes
    that must open their own), or one rebuilt from a user's `master_for` client; None for
    a client that is not sentinel-managed."""
    pool = client.connection_pool
    if not isinstance(pool, SentinelConnectionPool):
        return None
    own = getattr(pool, "rqconc_url", None)
    if own:
        return str(own)
    kwargs = pool.connection_kwargs
    auth = ""
    if kwargs.get("password"):
        user = quote(kwargs.get("username") or "", safe="")
        auth = f"{user}:{quote(kwargs['password'], safe='')}@"
    return _shown(pool, auth)


def describe(client: redis.Redis) -> Optional[str]:
    """A printable, password-free name: the sentinels, the service and the master in use."""
    pool = client.connection_pool
    if not isinstance(pool, SentinelConnectionPool):
        return None
    kwargs = pool.connection_kwargs
    user = kwargs.get("username")
    # A user is shown only beside a password: alone, it may be a password (see clients.py).
    name = _shown(pool, f"{quote(user, safe='')}@" if user and kwargs.get("password") else "")
    master = pool.master_address
    return f"{name} (master {master[0]}:{master[1]})" if master else name


def _shown(pool: SentinelConnectionPool, auth: str) -> str:
    tls = issubclass(pool.connection_class, redis.SSLConnection)
    scheme = "rediss+sentinel" if tls else "redis+sentinel"
    hosts = ",".join(_address(s) for s in pool.sentinel_manager.sentinels)
    service = quote(pool.service_name, safe="")
    return f"{scheme}://{auth}{hosts}/{service}/{pool.connection_kwargs.get('db', 0)}"


def _address(sentinel_client: redis.Redis) -> str:
    kwargs = sentinel_client.connection_pool.connection_kwargs
    host = str(kwargs.get("host", "localhost"))
    return f"[{host}]:{kwargs.get('port')}" if ":" in host else f"{host}:{kwargs.get('port')}"


def sentinel_addresses(url: str) -> List[Tuple[str, int]]:
    """The sentinels a URL names (for tools and tests)."""
    return SentinelURL(url).sentinels
