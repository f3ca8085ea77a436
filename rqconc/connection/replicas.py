"""`wait_replicas=N`: a step counts as done only once N replicas hold it (SPEC section 8).

Replication is asynchronous: a master that dies right after a write may take it along, and
the replica promoted in its place never saw it (an acknowledged enqueue lost, a finished job
run again). Redis' `WAIT N TIMEOUT`, sent on the same connection right after a write, blocks
until N replicas acknowledged everything that connection wrote, or the timeout passes.

`Replicated` wraps whatever a step is called on (a redis-py client, a `PooledConnection`, a
worker child's `DirectConnection`) and sends WAIT in the same write as the step itself (one
round trip: a pipeline on redis-py, one `sendall` on the direct paths). With N = 0 nothing is
wrapped (`replicated` returns the client as it is): no extra bytes, no extra round trip.

When fewer than N replicas acknowledged in time, the step has run on the master but may not
survive a failover: `ReplicasBehind` is raised, a `ReplyLost` ("it may have run"), so every
caller treats it as it treats a reply lost on the wire (an enqueue is sent again, being
idempotent per id; a worker's take puts its claim back; a completion is retried until
recorded), and users get `rqconc.ConnectionError` naming the cause.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from rqconc.connection.direct import ReplyLost

DEFAULT_WAIT_TIMEOUT = 1.0


class ReplicasBehind(ReplyLost):
    """Fewer replicas than asked acknowledged a step within the wait timeout."""


class ReplicaWait:
    """How many replicas must acknowledge each step, and for how long to wait (s)."""

    __slots__ = ("replicas", "timeout")

    def __init__(self, replicas: int = 0, timeout: float = DEFAULT_WAIT_TIMEOUT) -> None:
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
            raise ValueError(f"wait_replicas must be an integer >= 0, not {replicas!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"wait_timeout must be a number of seconds > 0, not {timeout!r}")
        self.replicas = replicas
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return f"ReplicaWait(replicas={self.replicas}, timeout={self.timeout:g})"

    @property
    def command(self) -> tuple:
        # At least 1 ms: WAIT with timeout 0 blocks forever.
        return ("WAIT", self.replicas, max(1, int(self.timeout * 1000)))

    def check(self, acknowledged: Any) -> None:
        if isinstance(acknowledged, Exception):  # the connection broke between the two
            raise ReplyLost(f"WAIT failed after the step: {acknowledged}")
        if int(acknowledged) < self.replicas:
            raise ReplicasBehind(
                f"only {int(acknowledged)} of {self.replicas} replicas acknowledged the write "
                f"within {self.timeout:g} s (wait_replicas={self.replicas}, "
                f"wait_timeout={self.timeout:g}): it may be lost if the master fails now"
            )


def replicated(client: Any, wait: Optional[ReplicaWait]) -> Any:
    """`client`, made to wait for `wait.replicas` after each step; itself when none."""
    if wait is None or wait.replicas == 0:
        return client
    return Replicated(client, wait)


class Replicated:
    """The subset of a client that the steps use, each step followed by WAIT in the same
    round trip; every other attribute is the wrapped client's."""

    def __init__(self, client: Any, wait: ReplicaWait) -> None:
        self.inner = client
        self.wait = wait

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def evalsha(self, sha: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self._step(("EVALSHA", sha, numkeys, *keys_and_args))

    def fcall(self, function: str, numkeys: int, *keys_and_args: Any) -> Any:
        return self._step(("FCALL", function, numkeys, *keys_and_args))

    def _step(self, command: Sequence[Any]) -> Any:
        reply, acknowledged = self._with_wait([command])
        # NOSCRIPT, "Function not found" and friends: nothing ran, as without us.
        if isinstance(reply, Exception):
            raise reply
        self.wait.check(acknowledged)
        return reply

    def pipelined(self, *commands: Sequence[Any]) -> List[Any]:
        """The direct connection's pipelined(), with WAIT last (a blocking take included:
        the take it ends with is a write like any other)."""
        *replies, acknowledged = self.inner.pipelined(*commands, self.wait.command)
        if not any(isinstance(reply, Exception) for reply in replies):
            self.wait.check(acknowledged)
        return replies

    def _with_wait(self, commands: List[Sequence[Any]]) -> List[Any]:
        if hasattr(self.inner, "pipelined"):  # DirectConnection, PooledConnection
            return list(self.inner.pipelined(*commands, self.wait.command))
        pipe = self.inner.pipeline(transaction=False)  # a redis-py client: one connection
        for command in commands:
            pipe.execute_command(*command)
        pipe.execute_command(*self.wait.command)
        return list(pipe.execute(raise_on_error=False))

    def script_load(self, source: str) -> Any:
        return self.inner.script_load(source)

    def function_load(self, code: str, replace: bool = False) -> Any:
        return self.inner.function_load(code, replace=replace)
