"""Redis Cluster: `redis+cluster://` URLs, the cluster client, and the direct socket path to
the master that serves one namespace (SPEC section 8).

Every key of a namespace carries the hash tag `{namespace}` (rqconc/store/keys.py), so a
namespace lives in one slot and so on one master: each Lua step, pipeline and blocking take
of a namespace goes to that master alone. A worker child's direct connection
(`ClusterDirectConnection`) talks to it through its socket, as on a single Redis; when the
slot moved (MOVED / ASK, a resharding) or its master is gone (a failover), it asks the cluster
for the current map and speaks to whichever master serves the slot now.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qsl, quote, unquote

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.maint_notifications import MaintNotificationsConfig
from redis.retry import Retry

from rqconc import errors
from rqconc.connection.direct import _BUFFER_SIZE, DirectConnection, ReplyLost

SCHEMES = ("redis+cluster://", "rediss+cluster://")
# The TLS options a rediss+cluster:// URL may carry (as redis-py reads them on rediss://).
_TLS_OPTIONS = ("ssl_cert_reqs", "ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
# Replies that mean "this node does not serve the slot (now)": the request did not run.
_REDIRECTED = (
    redis.exceptions.MovedError,  # a subclass of AskError
    redis.exceptions.TryAgainError,
    redis.exceptions.ClusterDownError,
)

URL_FORM = "redis+cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]"


class ClusterUnreachable(errors.ConnectionError, redis.exceptions.ConnectionError):
    """No seed node of the cluster answered: an outage to retry for workers (a redis-py
    ConnectionError), one clear line for the CLI (an rqconc.ConnectionError)."""


def is_cluster_url(url: str) -> bool:
    return url.lower().startswith(SCHEMES)


def is_cluster(client: Any) -> bool:
    return isinstance(client, (RedisCluster, LazyRedisCluster))


def parse_url(url: str) -> Tuple[List[Tuple[str, int]], Dict[str, Any]]:
    """The seed nodes (host, port) and client options of a cluster URL; ValueError naming
    what is wrong (never quoting the URL: the caller shows it redacted)."""
    scheme, _, rest = url.partition("://")
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    if path.strip("/") not in ("", "0"):
        raise ValueError("a Redis Cluster has only database 0")
    userinfo, at, hosts = netloc.rpartition("@")
    options: Dict[str, Any] = {}
    if at:
        user, colon, password = userinfo.partition(":")
        if colon:
            options["username"] = unquote(user) or None
            options["password"] = unquote(password)
        else:  # like redis-py on redis://secret@host: a lone name is the password
            options["password"] = unquote(user)
    seeds = [_host_port(item) for item in hosts.split(",") if item]
    if not seeds:
        raise ValueError(f"it names no node; use {URL_FORM}")
    for name, value in parse_qsl(query):
        if name not in _TLS_OPTIONS or scheme.lower() != "rediss+cluster":
            raise ValueError(f"unknown option {name!r} (a cluster URL takes TLS options only)")
        options[name] = value
    if scheme.lower() == "rediss+cluster":
        options["ssl"] = True
    return seeds, options


def _host_port(item: str) -> Tuple[str, int]:
    if item.startswith("["):  # [IPv6]:port
        host, _, port = item[1:].partition("]:")
    else:
        host, _, port = item.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"node {item!r} is not HOST:PORT; use {URL_FORM}")
    return host, int(port)


def connect(url: str, socket_options: Dict[str, Any], retry: Retry) -> LazyRedisCluster:
    """A cluster client for `url`, with rqconc's socket options on every node's connections.
    A bad URL is a ValueError here; nothing is sent yet (see LazyRedisCluster)."""
    seeds, options = parse_url(url)
    options.update(socket_options)
    options.pop("retry", None)  # the cluster client's own retry replaces the per-node one

    def make() -> RedisCluster:
        try:
            return RedisCluster(
                startup_nodes=[ClusterNode(host, port) for host, port in seeds],
                require_full_coverage=False,  # a failover leaves slots briefly masterless
                retry=retry,
                # Not offered by open-source Redis: asking costs each connection a round trip.
                maint_notifications_config=MaintNotificationsConfig(enabled=False),
                **options,
            )
        except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as exc:
            raise _connect_error(url, seeds, exc) from None

    return LazyRedisCluster(url, seeds, options, make)


class LazyRedisCluster:
    """A `RedisCluster` made on first use. redis-py's reads the slot map from the seeds as it
    is made, and fails when none answers; rqconc's clients send nothing until the first
    command (a worker started while Redis is down retries, a CLI command fails in its own
    error handling), so the cluster client is made, and its failure raised as an outage
    (`ClusterUnreachable`, a redis-py ConnectionError), by the first command that needs it.
    Every attribute but these few is the real client's."""

    def __init__(
        self,
        url: str,
        seeds: List[Tuple[str, int]],
        options: Dict[str, Any],
        make: Callable[[], RedisCluster],
    ) -> None:
        self.url, self.seeds, self.options = url, seeds, options
        self._make = make
        self._client: Optional[RedisCluster] = None
        self._lock = threading.Lock()

    def real(self) -> RedisCluster:
        client = self._client
        if client is None:
            with self._lock:  # threads of one worker: one slot-map read, not one each
                if self._client is None:
                    self._client = self._make()
                client = self._client
        return client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def _connect_error(
    url: str, seeds: List[Tuple[str, int]], exc: BaseException
) -> errors.ConnectionError:
    """Why no cluster client could be made: settings no retry fixes (credentials, a node not
    in cluster mode) are a ConfigurationError; anything else an outage."""
    nodes = f"{scheme_of(url)}://" + ",".join(_address(host, port) for host, port in seeds)
    if isinstance(exc.__cause__, redis.exceptions.AuthenticationError) or isinstance(
        exc, redis.exceptions.AuthenticationError
    ):
        return errors.ConfigurationError(
            f"the Redis Cluster at {nodes} refused the credentials "
            f"({first_line(exc.__cause__ or exc)}); check "
            "the user and password in --url / REDIS_URL"
        )
    if "Cluster mode is not enabled" in str(exc):
        return errors.ConfigurationError(
            f"Redis at {nodes} is not a cluster node (cluster mode is off); give a plain "
            "Redis as redis://HOST:PORT/DB in --url / REDIS_URL"
        )
    return ClusterUnreachable(
        f"cannot reach the Redis Cluster at {nodes} ({type(exc).__name__}: {first_line(exc)}); "
        "check that its nodes run and that --url / REDIS_URL is right"
    )


def scheme_of(url: str) -> str:
    return url.partition("://")[0].lower()


def first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0]


def connection_kwargs(client: Any) -> Dict[str, Any]:
    """The options every node connection of the cluster client gets (password included)."""
    if isinstance(client, LazyRedisCluster):
        return dict(client.options)
    return dict(client.nodes_manager.connection_kwargs)


def describe(client: Any) -> str:
    """A printable, password-free name of the cluster: its known nodes (or seeds)."""
    kwargs = connection_kwargs(client)
    scheme = "rediss+cluster" if kwargs.get("ssl") else "redis+cluster"
    return f"{scheme}://{_nodes(client)}"


def url_of(client: Any) -> str:
    """A URL reaching the same cluster, credentials included, for other processes."""
    if isinstance(client, LazyRedisCluster):
        return client.url
    kwargs = connection_kwargs(client)
    user, password = kwargs.get("username"), kwargs.get("password")
    auth = f"{quote(user or '', safe='')}:{quote(password, safe='')}@" if password else ""
    scheme = "rediss+cluster" if kwargs.get("ssl") else "redis+cluster"
    return f"{scheme}://{auth}{_nodes(client)}"


def _nodes(client: Any) -> str:
    if isinstance(client, LazyRedisCluster):
        if client._client is None:  # never made: its seeds, as the URL gave them
            return ",".join(_address(host, port) for host, port in client.seeds)
        client = client.real()
    nodes = client.nodes_manager.startup_nodes.values() or client.get_nodes()
    return ",".join(sorted(_address(node.host, node.port) for node in nodes))


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def master_of(client: RedisCluster, key: str) -> ClusterNode:
    """The master that serves `key`'s slot, by the client's current map."""
    return client.nodes_manager.get_node_from_slot(key_slot(key.encode()))


def refresh(client: RedisCluster) -> None:
    """Read the slot map again (after MOVED, or when a master stopped answering). Failing to
    reach any node leaves the old map: the next call fails, and its caller retries."""
    try:
        client.nodes_manager.initialize()
    except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException):
        pass


class ClusterDirectConnection(DirectConnection):
    """A `DirectConnection` to the master serving one slot (the slot of `key`, any key of the
    namespace), which follows the slot when it moves or its master fails over."""

    def __init__(self, cluster: RedisCluster, key: str) -> None:
        self._cluster = cluster
        self._slot = key_slot(key.encode())  # no client needed: made before the first use
        self._connection: Optional[Any] = None  # made on first use, from the current map
        self._sock = None
        self._reader = None
        self._buffer = bytearray(_BUFFER_SIZE)

    @property
    def node(self) -> ClusterNode:
        try:
            return self._cluster.nodes_manager.get_node_from_slot(self._slot)
        except redis.exceptions.SlotNotCoveredError as exc:
            refresh(self._cluster)
            raise redis.exceptions.ConnectionError(f"no master serves the slot: {exc}") from None

    def _socket(self) -> Any:
        if self._connection is None:
            node = self.node
            client = node.redis_connection or self._cluster.get_redis_connection(node)
            pool = client.connection_pool
            self._connection = pool.connection_class(**pool.connection_kwargs)
        return super()._socket()

    def close(self) -> None:
        if self._connection is not None:
            super().close()
        self._connection = None  # the next request asks the (maybe refreshed) map again
        self._sock = None

    def execute(self, *args: Any) -> Any:
        try:
            return super().execute(*args)
        except _REDIRECTED:
            self._moved()  # nothing ran: once more, on the master the cluster names now
            return super().execute(*args)
        except ReplyLost:
            self._moved()
            raise
        except (redis.exceptions.ConnectionError, redis.exceptions.ReadOnlyError):
            self._moved()  # a master gone, or demoted to a replica: find the new one
            raise

    def pipelined(self, *commands: Any) -> List[Any]:
        try:
            replies = super().pipelined(*commands)
        except (redis.exceptions.ConnectionError, redis.exceptions.ReadOnlyError):
            self._moved()
            raise
        if any(isinstance(reply, _REDIRECTED + (redis.ReadOnlyError,)) for reply in replies):
            # Every reply says so (one slot, one node): nothing ran. Once more, elsewhere.
            self._moved()
            replies = super().pipelined(*commands)
        return replies

    def _moved(self) -> None:
        self.close()
        refresh(self._cluster)


def direct_connection(client: Any, key: str) -> DirectConnection:
    """The direct connection a worker child uses for the namespace of `key`: to the Redis of
    a plain client, or to the master serving the key's slot of a cluster."""
    if is_cluster(client):
        return ClusterDirectConnection(client, key)
    return DirectConnection(client)
