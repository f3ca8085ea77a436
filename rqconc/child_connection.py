"""One Redis connection per worker child, for the steps every job pays for.

A child's take, completion and marker wait are strictly sequential, so they need neither a
connection pool (a lock, a `poll` syscall and a pid check per command in redis-py) nor
redis-py's generic command packing (~30 us per EVALSHA with 20 arguments, against ~3 us
for hiredis' own packer). The connection itself is redis-py's, made from the client's pool
settings, so passwords, ACL users, TLS, unix sockets and the database number behave exactly
as for every other rqconc client.

Errors keep redis-py's types (`redis.exceptions.ConnectionError`, `NoScriptError`, ...), so
callers handle an outage the same way whichever path a command took.
"""
from __future__ import annotations

from typing import Any, List, Sequence

import hiredis
import redis

# A command that could not be sent did not run: it is safe to send it again once, on a
# fresh connection (a server restart leaves the old socket dead until first used).
_SEND_FAILED = (redis.exceptions.ConnectionError, OSError)


class ChildConnection:
    """The subset of `redis.Redis` that the hot steps use, on one dedicated connection."""

    def __init__(self, client: redis.Redis) -> None:
        self._connection = client.connection_pool.make_connection()

    def _send(self, *commands: Sequence[Any]) -> None:
        # redis-py sends a list of chunks: several commands go out in one write.
        packed = [hiredis.pack_command(tuple(args)) for args in commands]
        try:
            self._connection.send_packed_command(packed)
        except _SEND_FAILED:
            self._connection.disconnect()
            self._connection.send_packed_command(packed)

    def _reply(self) -> Any:
        try:
            return self._connection.read_response()
        except redis.exceptions.ResponseError:
            raise  # the server answered (an error reply): the connection is fine
        except BaseException:
            # A reply cut short leaves the stream out of step: never read from it again.
            self._connection.disconnect()
            raise

    def execute(self, *args: Any) -> Any:
        self._send(args)
        return self._reply()

    def pipelined(self, *commands: Sequence[Any]) -> List[Any]:
        """Send the commands in one write and read every reply; an error reply is returned
        in its place (raising at the first would leave the others unread)."""
        self._send(*commands)
        replies: List[Any] = []
        for _ in commands:
            try:
                replies.append(self._reply())
            except redis.exceptions.ResponseError as exc:
                replies.append(exc)
        return replies

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self.execute("EVALSHA", sha, numkeys, *keys_and_args)

    def script_load(self, source: str) -> Any:
        return self.execute("SCRIPT", "LOAD", source)

    def close(self) -> None:
        try:
            self._connection.disconnect()
        except OSError:
            pass
