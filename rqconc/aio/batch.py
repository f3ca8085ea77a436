"""The enqueue steps that a queue's coroutines issue in one turn of the event loop, sent to
Redis as one pipeline (SPEC 15: 100 coroutines enqueueing one job at a time).

Each `await batch.run(step)` puts the step's call on the batch and waits for its own reply.
The first call starts the flusher task, whose first step runs once the callbacks already
ready in this turn have (no timer: a lone enqueue waits for nothing but its round trip). It
takes every call gathered and sends them as ONE pipeline (`connection.aio.pipelined`): one
command per call, no MULTI (each step is atomic on its own; none spans two), then WAIT when
the queue waits for replicas (it counts everything the pipeline's connection wrote). Each
call's command (by SHA or as a function) and its load when a server lacks it are the store's
(store/scripts.py), as for every other caller. Calls issued while that pipeline is out
gather for the next one.

Invariants, each held by a test (tests/aio/test_async_batch.py):
- Order: one pipeline in flight per batch, its calls in the order they were issued, so the
  jobs of one priority are queued in the order their enqueues were awaited.
- Each caller gets its own reply or its own error: Redis answers each command of a pipeline
  alone, so a step that fails (a bad argument) fails alone.
- NOSCRIPT or a missing library (a first use, or a restart flushed the cache): those calls
  did not run; what they lacked is loaded and those calls sent again, in their order.
- A connection that fails (after the client's own retries: a resend is safe, as only steps
  that are idempotent per id are batched, `EnqueuePlan.resendable`) fails exactly the calls
  of that pipeline; the caller turns the error into rqconc's one-line ConnectionError.
- A caller canceled before its call was sent sends nothing.
- No callback of the loop wakes or reads more than SLICE calls' worth (debug mode's slow
  callbacks, SPEC 15).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any, List, Optional, Tuple

from rqconc.connection.aio import pipelined
from rqconc.connection.replicas import ReplicaWait
from rqconc.store.scripts import Step

Call = Tuple[Step, "asyncio.Future[Any]"]

# Callers woken (and replies read, connection.aio.pipelined) per callback of the loop. In
# debug mode asyncio records a stack for every callback it schedules (100-200 us each on a
# loaded machine): a slice keeps each callback well under SPEC 15's 10 ms, whatever the
# size of the pipeline, for one more turn of the loop per slice.
SLICE = 16


class StepBatch:
    """The batched steps of one queue's redis.asyncio client (a RedisCluster's are sent
    alone: AsyncQueue)."""

    def __init__(self, client: Any, wait: Optional[ReplicaWait] = None) -> None:
        self.client = client
        self.wait = wait if wait is not None and wait.replicas else None
        self._calls: List[Call] = []
        self._flusher: Optional[asyncio.Task[None]] = None

    async def run(self, step: Step) -> Any:
        """The step's decoded reply, sent with the calls issued in this turn of the loop."""
        future = asyncio.get_running_loop().create_future()
        self._calls.append((step, future))
        if self._flusher is None:
            self._flusher = asyncio.ensure_future(self._flush())
        return step.decode(await future)

    async def _flush(self) -> None:
        try:
            while self._calls:
                calls, self._calls = self._calls, []
                calls = [call for call in calls if not call[1].done()]  # canceled unsent
                if calls:
                    with contextlib.suppress(Exception):  # each caller got it (_send)
                        await self._send(calls)
        except BaseException as error:  # the loop cancels the flusher: nobody waits forever
            _settle(self._calls, error)
            self._calls = []
            raise
        finally:
            self._flusher = None

    async def _send(self, calls: List[Call]) -> None:
        """Each call's reply or error to its caller; raises what failed them all."""
        try:
            replies = await self._pipeline(calls)
            unknown = [i for i, reply in enumerate(replies) if calls[i][0].script.missing(reply)]
            if unknown:
                lacking = {
                    calls[i][0].script.name: (calls[i][0].script, replies[i]) for i in unknown
                }
                for script, reply in lacking.values():
                    await script.aload_missing(self.client, reply)
                again = await self._pipeline([calls[i] for i in unknown])
                for i, reply in zip(unknown, again):
                    replies[i] = reply
            for i, ((_, future), reply) in enumerate(zip(calls, replies), 1):
                if not future.done():
                    _resolve(future, reply)
                if i % SLICE == 0:
                    await asyncio.sleep(0)  # let the loop run between slices of wakeups
        except BaseException as error:  # those not answered yet get it
            _settle(calls, error)
            raise

    async def _pipeline(self, calls: List[Call]) -> List[Any]:
        commands = [step.command(self.client) for step, _ in calls]
        if self.wait is None:
            return await pipelined(self.client, commands, SLICE)
        replies = await pipelined(self.client, [*commands, self.wait.command], SLICE)
        acknowledged = replies.pop()
        try:
            self.wait.check(acknowledged)
        except Exception as behind:  # each step that ran may not survive a failover
            return [
                reply if isinstance(reply, Exception) else _own_copy(behind) for reply in replies
            ]
        return replies


def _resolve(future: asyncio.Future[Any], reply: Any) -> None:
    if isinstance(reply, Exception):
        future.set_exception(reply)
    else:
        future.set_result(reply)


def _settle(calls: List[Call], error: BaseException) -> None:
    """Every caller still waiting gets `error` (a copy each: a raised exception collects
    its raiser's traceback), or is canceled with the flusher."""
    for _, future in calls:
        if future.done():
            continue
        if isinstance(error, asyncio.CancelledError):
            future.cancel()
        else:
            future.set_exception(_own_copy(error))


def _own_copy(error: BaseException) -> BaseException:
    try:
        return copy.copy(error)
    except Exception:  # an exception that cannot be copied: the one instance, shared
        return error
