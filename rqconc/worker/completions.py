"""The completions of one worker process's slots, combined (issue 21).

Where one process runs several jobs at once (`--slots`, the threading, gevent and asyncio
backends), each slot that finishes a job would send its own complete step. Here they go
through an `engine.slots.combiner.Combiner`: a completion that finds another of this process on
its way waits for it and then goes with every other that piled up meanwhile, in one
lua/complete_many.lua step that also takes each slot's next job. Alone, a completion is the
plain complete step, with no wait added; under load, Redis receives one request, one
script set-up and one clock read for many jobs (the per-Redis-core throughput of
bench/redis_core.py). A forking or multiprocessing child with one slot never combines: told
so (`alone`, WorkSource.child_alone), it sends the plain step without the combiner's lock
(two lock rounds and four calls a job; bench/PROFILE.md).

Each job is still completed and fenced by its own claim, and each slot's next job leased
under that slot's own claim: every later step about them is per job. A flow stage's
completion (with a next stage) goes alone (complete.lua). When the combined step fails,
every completion in it sees the failure as its own: a lost reply (it may have run) is what
each slot's orphan and retry path (worker/taking.py) already handles.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from rqconc.connection.direct import ReplyLost
from rqconc.engine.slots.combiner import Combiner
from rqconc.store.steps.batch import Completion, complete_many
from rqconc.store.steps.core import CompleteReply
from rqconc.worker.connections import Connections

# (next claim, queues in take order, lease ms), as Steps.complete's next_take.
NextTake = Tuple[str, Sequence[str], int]
# A completion as a slot asks for it: the job's part and its slot's next take.
Asked = Tuple[Completion, Optional[NextTake]]
Replied = Tuple[CompleteReply, Any]

# The most completions one step carries: bounds the time one step holds Redis.
LIMIT = 64


def _call_if_alive(method: weakref.WeakMethod[Callable[[], None]]) -> None:
    bound = method()
    if bound is not None:
        bound()


def _abandoned() -> BaseException:
    return ReplyLost("the slot sending this completion with others was interrupted")


def batch_of(asked: Sequence[Asked]) -> Tuple[List[Completion], Sequence[str], int]:
    """The completions of one complete_many step, each with the claim its slot takes next,
    and the batch's one take order and lease: the first taking slot's (round-robin rotates
    per batch instead of per job)."""
    order: Sequence[str] = ()
    lease_ms = 0
    for _, take in asked:
        if take is not None:
            _, order, lease_ms = take
            break
    completions = [
        (*completion[:5], take[0] if take is not None else "") for completion, take in asked
    ]
    return completions, order, lease_ms


class CombinedCompletions:
    """complete(...) from any slot of this process; see the module's doc."""

    def __init__(self, connections: Connections, worker: str) -> None:
        self.connections = connections
        self.worker = worker
        self.alone = False  # set in a process child with one slot (redis_source.py)
        self._combiner: Combiner[Asked, Replied] = Combiner(self._send, LIMIT, _abandoned)
        # A forked child starts with a combiner of its own: the parent's may be mid-batch, its
        # lock held by a thread the child does not have. (Registered once and weakly, so no
        # os.getpid() per job and no worker kept alive by the hook.)
        own = weakref.WeakMethod(self._forked)
        os.register_at_fork(after_in_child=lambda: _call_if_alive(own))

    def _forked(self) -> None:
        self._combiner = Combiner(self._send, LIMIT, _abandoned)

    def __getstate__(self) -> Dict[str, Any]:
        # A spawned child makes its own combiner (locks do not pickle).
        return {"connections": self.connections, "worker": self.worker}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        CombinedCompletions.__init__(self, state["connections"], state["worker"])

    def complete(self, completion: Completion, take: Optional[NextTake]) -> Replied:
        """(RECORDED or STALE, what the next take returned or None)."""
        if self.alone:
            return self._send_one(completion, take)
        return self._combiner.call((completion, take))

    def _send_one(self, completion: Completion, take: Optional[NextTake]) -> Replied:
        """complete.lua alone, on this slot's own connection."""
        claim, job_id, queue, result, serializer, _ = completion
        steps = self.connections.child().steps
        args = (claim, job_id, queue, result, serializer, self.worker)
        if take is None:
            return steps.complete(*args), None
        return steps.complete(*args, next_take=take)

    def _send(self, asked: Sequence[Asked]) -> List[Replied]:
        if len(asked) == 1:  # the leading slot's own connection
            return [self._send_one(*asked[0])]
        steps = self.connections.child().steps
        completions, order, lease_ms = batch_of(asked)
        return complete_many(steps, completions, order, lease_ms, self.worker)
