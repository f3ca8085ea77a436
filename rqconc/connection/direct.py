"""One Redis connection spoken to through its socket, for the steps every job pays for.

A worker child's take, completion and marker wait, and a producer's enqueue, are one script
call each. redis-py wraps every command in a pool checkout (a lock, a `poll` syscall, a pid
check), retry, observability and event layers, and packs it in Python: several times the
client CPU of hiredis' packer, one `sendall` and one `recv_into` (`bench/connection_cost.py`;
figures in bench/RESULTS.md).

The connection itself is redis-py's, made from the client's pool settings and connected by
redis-py, so passwords, ACL users, TLS, unix sockets, RESP3 and the database number behave
exactly as for every other rqconc client; only the bytes of our own commands bypass it.

Errors keep redis-py's types (`redis.exceptions.ConnectionError`, `TimeoutError`,
`NoScriptError`, ...), so callers handle an outage the same way whichever path a command took.
A failure after the request left, though, is a `ReplyLost` (a `ConnectionError`): the server
may have run the command, so only a caller whose step is idempotent may send it again.

The connections are made from the pool's class and settings but are not the pool's: they do
not count against its `max_connections` (a pool that counted them but never got them back
would refuse the client's own commands once it reached the cap).
"""

from __future__ import annotations

import socket
from typing import Any, List, Optional, Sequence

import hiredis
import redis
from redis._parsers import BaseParser

_BUFFER_SIZE = 65536


class ReplyLost(redis.exceptions.ConnectionError):
    """The connection failed after the whole request was sent: it may have run."""


class DirectConnection:
    """The subset of `redis.Redis` that `Script` uses (EVALSHA, FCALL and their loads), on one
    dedicated connection. Not thread-safe: one owner at a time (a child, or a producer
    between checkout and release)."""

    def __init__(self, client: redis.Redis) -> None:
        pool = client.connection_pool
        # Not pool.make_connection(): that counts against max_connections, and this connection
        # never goes back to the pool to be uncounted.
        self._connection = pool.connection_class(**pool.connection_kwargs)
        self._sock: Optional[socket.socket] = None
        self._reader: Any = None
        self._buffer = bytearray(_BUFFER_SIZE)

    def _socket(self) -> socket.socket:
        if self._sock is None:
            self._connection.connect()  # the handshake: TLS, AUTH/HELLO, SELECT
            self._sock = self._connection._sock
            # Error replies become redis-py's exception classes (NoScriptError, ...).
            self._reader = hiredis.Reader(
                protocolError=redis.exceptions.InvalidResponse, replyError=BaseParser.parse_error
            )
        return self._sock

    def _send(self, packed: bytes) -> None:
        try:
            self._socket().sendall(packed)
        except (OSError, redis.exceptions.ConnectionError):
            # sendall raises only before its last byte left, so the server has no complete
            # request (a pipeline's earlier commands aside: BZPOPMIN, which only consumes a
            # wake-up marker): nothing ran. A server restart leaves the old socket dead until
            # first used, and one fresh connection is worth a try.
            self.close()
            try:
                self._socket().sendall(packed)
            except OSError as exc:
                self.close()
                raise _translated(exc) from exc

    def _reply(self) -> Any:
        reader = self._reader
        reply = reader.gets()
        try:
            while reply is False:
                count = self._sock.recv_into(self._buffer)  # type: ignore[union-attr]
                if not count:
                    raise ReplyLost("Connection closed by server before its reply.")
                reader.feed(self._buffer, 0, count)
                reply = reader.gets()
        except BaseException as exc:
            # A reply cut short leaves the stream out of step: never read from it again.
            self.close()
            if isinstance(exc, OSError):  # a read timeout too: the request may have run
                raise ReplyLost(f"Error while reading a reply from Redis: {exc}") from exc
            raise
        return reply

    def execute(self, *args: Any) -> Any:
        self._send(hiredis.pack_command(args))
        reply = self._reply()
        # An error reply comes back as an exception object (not raised): a ResponseError
        # (NOSCRIPT, ...) or, while a restarted server loads its data, a ConnectionError
        # (LOADING), which callers must meet as the outage it is.
        if isinstance(reply, Exception):
            self._demoted_check([reply])
            raise reply
        return reply

    def pipelined(self, *commands: Sequence[Any]) -> List[Any]:
        """Send the commands in one write and read every reply; an error reply is returned
        in its place (raising at the first would leave the others unread)."""
        self._send(b"".join(hiredis.pack_command(tuple(args)) for args in commands))
        return self._demoted_check([self._reply() for _ in commands])

    def _demoted_check(self, replies: List[Any]) -> List[Any]:
        """READONLY means this server was a master and is now a replica (a failover demoted
        it, or we reached it before the sentinels had moved on): no write ran, so it is an
        outage to retry after reconnecting (a sentinel-managed connection asks the sentinels
        for the master again), never a job's failure."""
        if any(isinstance(reply, redis.exceptions.ReadOnlyError) for reply in replies):
            self.close()
            raise redis.exceptions.ConnectionError("the server is now a replica (READONLY)")
        return replies

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self.execute("EVALSHA", sha, numkeys, *keys_and_args)

    def script_load(self, source: str) -> Any:
        return self.execute("SCRIPT", "LOAD", source)

    def fcall(self, function: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self.execute("FCALL", function, numkeys, *keys_and_args)

    def function_load(self, code: str, replace: bool = False) -> Any:
        return self.execute("FUNCTION", "LOAD", *(("REPLACE",) if replace else ()), code)

    def close(self) -> None:
        self._sock = None
        try:
            self._connection.disconnect()
        except OSError:
            pass


def _translated(exc: OSError) -> Exception:
    """A socket error while sending, as redis-py would raise it."""
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return redis.exceptions.TimeoutError(f"Timeout writing to Redis: {exc}")
    return redis.exceptions.ConnectionError(f"Error while talking to Redis: {exc}")
