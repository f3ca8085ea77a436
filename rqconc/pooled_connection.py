"""The enqueue step on the caller's own connection pool, without redis-py's per-command layers.

`Queue.enqueue` is what producers call in a loop. redis-py wraps every command in retry,
observability and event layers and packs it in Python (~25 us of an enqueue's ~100 us);
hiredis' packer and the pool's plain checkout/release are all a script call needs. The pool is
the caller's, so threads, passwords, ACL users, TLS, unix sockets and the database number
behave exactly as with `client.evalsha`.

Any connection failure falls back to the client's own `execute_command`, so an outage meets
the retry policy the caller configured, exactly as a plain redis-py call would.
"""
from __future__ import annotations

from typing import Any

import hiredis
import redis

_CONNECTION_FAILED = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


def pooled_or_plain(client: Any) -> Any:
    """A `PooledConnection` for a plain `redis.Redis` on a connection pool; anything else
    (a cluster client, a single-connection client, a pipeline) is returned as it is."""
    if type(client) is redis.Redis and getattr(client, "connection", None) is None:
        return PooledConnection(client)
    return client


class PooledConnection:
    """The subset of `redis.Redis` that `Script` uses: `evalsha` and `script_load`."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._pool = client.connection_pool

    def execute(self, *args: Any) -> Any:
        pool = self._pool
        packed = [hiredis.pack_command(args)]  # redis-py sends a list of chunks
        try:
            connection = pool.get_connection()
        except _CONNECTION_FAILED:
            return self._client.execute_command(*args)
        try:
            connection.send_packed_command(packed)
            reply = connection.read_response()
        except redis.exceptions.ResponseError:
            pool.release(connection)  # the server answered: the connection is fine
            raise
        except _CONNECTION_FAILED:
            connection.disconnect()
            pool.release(connection)
            return self._client.execute_command(*args)
        except BaseException:
            # A reply cut short leaves the stream out of step: never read from it again.
            connection.disconnect()
            pool.release(connection)
            raise
        pool.release(connection)
        return reply

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self.execute("EVALSHA", sha, numkeys, *keys_and_args)

    def script_load(self, source: str) -> Any:
        return self.execute("SCRIPT", "LOAD", source)
