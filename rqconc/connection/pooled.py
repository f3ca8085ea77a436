"""The enqueue step on connections of the caller's client, without redis-py's per-command layers.

`Queue.enqueue` is what producers call in a loop. A plain `redis.Redis` call checks a
connection out of its pool (a lock, a `poll` syscall, a pid check, observability counters)
and back in, and wraps the command in retry and event layers: more client time per enqueue
than the enqueue step itself (figures in bench/RESULTS.md). A `PooledConnection` keeps its own idle
`DirectConnection`s, made from the client's pool settings (threads, passwords, ACL users, TLS,
unix sockets and the database number behave exactly as with `client.evalsha`). Taking one
and putting it back are single `list.pop` / `list.append` calls, atomic under the GIL and
never a switch point under gevent, so threads and greenlets share them without a lock.

A failure before the request left (a refused connection, a dead socket found on sending, a
LOADING reply) falls back to the client's own `execute_command`, so an outage meets the retry
policy the caller configured, exactly as a plain redis-py call would: nothing ran yet. A
failure after it left is raised as `ReplyLost`: the step may have run, and only its caller
knows whether sending it again is safe (the enqueue step is idempotent per id, and
`Queue.enqueue` sends it again once).

The connections are not the pool's and do not count against its `max_connections`.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

import redis

from rqconc.connection import cluster
from rqconc.connection.direct import DirectConnection, ReplyLost
from rqconc.connection.forks import fork_count

_CONNECTION_FAILED = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


def pooled_or_plain(client: Any, key: Optional[str] = None) -> Any:
    """A `PooledConnection` for a plain `redis.Redis` on a connection pool, or for a cluster
    client when `key` names the namespace (its connections go to the master serving the
    key's slot); anything else (a single-connection client, a pipeline) is returned as it is."""
    if type(client) is redis.Redis and getattr(client, "connection", None) is None:
        return PooledConnection(client)
    if key is not None and cluster.is_cluster(client):
        return PooledConnection(client, lambda: cluster.ClusterDirectConnection(client, key))
    return client


class PooledConnection:
    """The subset of `redis.Redis` that `Script` uses: `evalsha`, `fcall` and their loads."""

    def __init__(
        self, client: redis.Redis, make: Optional[Callable[[], DirectConnection]] = None
    ) -> None:
        self._client = client
        self._make = make or (lambda: DirectConnection(client))
        self._idle: List[DirectConnection] = []
        self._forks = fork_count()

    def _checkout(self) -> DirectConnection:
        if self._forks != fork_count():  # forked: the parent's sockets are not ours to use
            self._idle, self._forks = [], fork_count()
        try:
            return self._idle.pop()
        except IndexError:
            return self._make()

    def execute(self, *args: Any) -> Any:
        connection = self._checkout()
        try:
            reply = connection.execute(*args)
        except redis.exceptions.ResponseError:
            self._idle.append(connection)
            raise
        except ReplyLost:
            raise  # it may have run: never sent again here (the connection is closed)
        except _CONNECTION_FAILED:
            connection.close()  # a LOADING reply lands here too: the client's retries wait
            return self._client.execute_command(*args)
        # Anything else (an interrupt mid-read) leaves the connection out of the list; the
        # DirectConnection has closed it.
        self._idle.append(connection)
        return reply

    def pipelined(self, *commands: Sequence[Any]) -> List[Any]:
        """Commands in one write on one connection (a step and its WAIT, replicas.py); error
        replies in their places. Falls back to a redis-py pipeline as `execute` does."""
        connection = self._checkout()
        try:
            replies = connection.pipelined(*commands)
        except ReplyLost:
            raise
        except _CONNECTION_FAILED:
            connection.close()
            pipe = self._client.pipeline(transaction=False)
            for command in commands:
                pipe.execute_command(*command)
            return list(pipe.execute(raise_on_error=False))
        self._idle.append(connection)
        return replies

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self.execute("EVALSHA", sha, numkeys, *keys_and_args)

    def script_load(self, source: str) -> Any:
        return self.execute("SCRIPT", "LOAD", source)

    def fcall(self, function: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self.execute("FCALL", function, numkeys, *keys_and_args)

    def function_load(self, code: str, replace: bool = False) -> Any:
        return self.execute("FUNCTION", "LOAD", *(("REPLACE",) if replace else ()), code)
