"""The `redis.asyncio` clients of rqconc.aio, found as every other client is (SPEC section 6):
a client passed in is used as it is; else the URL (explicit, REDIS_URL, or the embedded
server's) is checked as `connect` checks it and opened with the same socket options: plain
and TLS URLs, unix sockets, Sentinel (redis.asyncio's Sentinel) and Cluster (redis.asyncio's
RedisCluster) alike. Nothing is sent to Redis here: the first command connects.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Dict, List, Sequence, Union

import hiredis
import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode
from redis.asyncio.retry import Retry
from redis.backoff import EqualJitterBackoff

try:
    from redis.driver_info import DriverInfo
except ImportError:  # an older redis-py reads its version once, at import
    DriverInfo = None  # type: ignore[assignment,misc]

from rqconc.connection import cluster, sentinel
from rqconc.connection.clients import checked_url, client_options, redact, resolve_url

AsyncConnectionLike = Union[str, aioredis.Redis, aioredis.RedisCluster, None]
Command = Sequence[Any]


def is_async_client(connection: Any) -> bool:
    return isinstance(connection, (aioredis.Redis, aioredis.RedisCluster))


def check_connection(connection: Any) -> None:
    """TypeError, at once, for what cannot become an async client."""
    if connection is None or isinstance(connection, str) or is_async_client(connection):
        return
    raise TypeError(
        "connection must be a Redis URL, a redis.asyncio.Redis or a "
        f"redis.asyncio.RedisCluster client, not {type(connection).__name__} (a blocking "
        "client would stall the event loop: rqconc.aio needs redis.asyncio's)"
    )


async def connect_async(connection: AsyncConnectionLike = None) -> Any:
    """An async client for `connection` (a URL, a redis.asyncio client, or None), not yet
    `ready` (that one talks to Redis)."""
    check_connection(connection)
    if is_async_client(connection):
        return connection
    if connection or os.environ.get("REDIS_URL"):
        url = resolve_url(connection)  # type: ignore[arg-type]
    else:  # the embedded server may have to be started: a subprocess and a wait
        url = await asyncio.to_thread(resolve_url, None)
    return async_client(checked_url(url))


async def ready(client: Any) -> Any:
    """`client`, able to route its first commands: a RedisCluster learns the cluster's slots
    now, once, before its users' commands go out concurrently.

    redis-py 8.1's asyncio RedisCluster picks a command's nodes before its lazy first
    `initialize()` runs: on a client that has not learned the slots yet (no default node),
    a keyed command such as EVALSHA is routed as keyless, to a random primary, and gets
    MOVED. Every reinitialize_steps (5) MOVEDs the client calls `aclose()`, which closes the
    connections other tasks are writing on: 20 coroutines enqueueing at once through a fresh
    client failed with "Error UNKNOWN while writing to socket. Connection lost." or
    "Connection closed by server" (redis-py's aclose-on-MOVED path: redis/redis-py PR 4322;
    the routing before initialize has no redis-py issue we found). Initializing first routes
    every command by its slot from the start. Idempotent: an initialized client returns at
    once."""
    if isinstance(client, aioredis.RedisCluster):
        await client.initialize()
    return client


def async_options(url: str, retries: int = 2) -> Dict[str, Any]:
    """`client_options(url)` with redis.asyncio's retry in place of redis-py's."""
    options = client_options(url)
    options["retry"] = Retry(EqualJitterBackoff(cap=0.5, base=0.05), retries)
    if DriverInfo is not None:
        # Told its version, redis-py does not look it up for every connection it opens
        # (importlib.metadata: a scan of sys.path and a METADATA parse, 2-10 ms of the event
        # loop each: 100 coroutines waiting for results open 100 connections).
        options["driver_info"] = DriverInfo(lib_version=redis.__version__)
    return options


def async_client(url: str, retries: int = 2) -> Any:
    """The redis.asyncio client of a checked URL. `retries`: how often a command whose
    connection failed is sent again (0 for steps that must not run twice unseen: a worker's
    takes, whose lost reply it handles itself, worker/native.py)."""
    options = async_options(url, retries)
    try:
        if cluster.is_cluster_url(url):
            seeds, cluster_options = cluster.parse_url(url)
            cluster_options.update(options)
            return aioredis.RedisCluster(
                startup_nodes=[ClusterNode(host, port) for host, port in seeds],
                require_full_coverage=False,  # a failover leaves slots briefly masterless
                # No cap of its own, as redis.asyncio's pool for one Redis (Redis's
                # maxclients is the limit): redis-py's 100 per node is less than SPEC 15's
                # 100 coroutines waiting for results on one namespace's master, plus the
                # enqueues sent meanwhile.
                max_connections=2**31,
                **cluster_options,
            )
        if sentinel.is_sentinel_url(url):
            parsed = sentinel.SentinelURL(url)
            manager = aioredis.Sentinel(
                parsed.sentinels, sentinel_kwargs=sentinel.sentinel_options(parsed)
            )
            return manager.master_for(parsed.service, **sentinel.master_options(parsed, options))
        return aioredis.Redis.from_url(url, **options)
    except ValueError:
        # Never quote redis-py's message: it may name a piece of the password.
        shape = sentinel.URL_SHAPE if sentinel.is_sentinel_url(url) else cluster.URL_FORM
        plain = not (sentinel.is_sentinel_url(url) or cluster.is_cluster_url(url))
        hint = "it cannot be read as a Redis URL" if plain else f"expected {shape}"
        raise ValueError(f"invalid Redis URL {redact(url)!r}: {hint}") from None


async def pipelined(
    client: aioredis.Redis, commands: Sequence[Command], slice_size: int = 16
) -> List[Any]:
    """The replies to `commands`, sent in one write on one connection of `client`'s pool (no
    MULTI), in order; an error reply is its ResponseError in its place. Packed by hiredis:
    redis-py's pipeline packs each argument in Python, most of an enqueue's client CPU in
    a pipeline of enqueue steps (bench/PROFILE.md). A connection that fails is retried as the
    client retries its commands, the whole request sent again: for idempotent commands.
    The loop runs between reading each `slice_size` replies (no callback reads them all)."""
    packed = b"".join([hiredis.pack_command(tuple(command)) for command in commands])
    pool = client.connection_pool
    connection = await pool.get_connection()
    try:
        return await connection.retry.call_with_retry(
            lambda: _exchange(connection, packed, len(commands), slice_size),
            lambda _: connection.disconnect(),
        )
    finally:
        await pool.release(connection)


async def _exchange(connection: Any, packed: bytes, count: int, slice_size: int) -> List[Any]:
    # read_response disconnects on any failure mid-read (a canceled caller included), so a
    # connection with replies left unread never goes back to the pool.
    await connection.send_packed_command(packed)
    replies: List[Any] = []
    for i in range(1, count + 1):
        try:
            replies.append(await connection.read_response())
        except redis.exceptions.ResponseError as error:
            replies.append(error)
        if i % slice_size == 0:
            await asyncio.sleep(0)
    return replies
