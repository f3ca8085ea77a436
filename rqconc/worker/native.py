"""The Redis side of the asyncio backend's native core (engine/native_slots.py, SPEC 15):
takes and completions over a `redis.asyncio` connection, made by the event loop's thread.

- Takes: the engine hands the claims of every slot idle in one turn of the loop; they are
  leased in one lua/take_many.lua step (and, when nothing waits, after a BZPOPMIN on the
  queues' markers in the same round trip), each job under its own slot's claim.
- Completions: the successes of one turn go in one lua/complete_many.lua step
  (`TurnBatches`), which also takes each slot's next job under that slot's next claim.
- An `async def` job is awaited in its slot's task, with the hooks, the job scope and the
  log fields of the threaded path (taking.Taker.perform), whose parts it uses.

The rare paths stay the threaded path's, run in the loop's default executor: a failure
(retry decision, hooks), a flow stage (complete.lua with its next stage), a stale claim's
explanation, a job given back. A step whose reply was lost is recorded again from there
(`until_recorded`); a job leased under a next claim of a lost reply goes back at the front
before the next take leaves: the orphans of the native completions (`_orphans`) and those a
plain function's completion filed on the threaded path (worker/connections.Orphans; before
that, such jobs waited for their lease to end).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import redis

from rqconc.connection.aio import async_client, ready
from rqconc.connection.backoff import REDIS_DOWN, Backoff
from rqconc.engine.slots.turns import TurnBatches
from rqconc.engine.source import FAILED, FINISHED, NativeWork, NextClaim, WorkItem
from rqconc.queue import current
from rqconc.store.steps.batch import await_then_take, complete_many_step, take_step
from rqconc.store.steps.core import CompleteReply, text
from rqconc.worker import logs
from rqconc.worker.completions import LIMIT, Asked, Replied, batch_of
from rqconc.worker.connections import url_of
from rqconc.worker.job_scope import JobScope
from rqconc.worker.recording import job_timeout, log_transition, until_recorded, work_item
from rqconc.worker.runner import Outcome, decoded
from rqconc.worker.taking import MAX_BLOCK, MIN_BLOCK, Taker, overrun

log = logging.getLogger("rqconc.worker")


class RedisNativeWork(NativeWork):
    """The native side of one worker process's RedisSource (see the module's doc)."""

    def __init__(self, taker: Taker) -> None:
        self.taker = taker
        self.connections = taker.connections
        self._client: Any = None  # a future of the client, made in the loop on first use
        self._backoff = Backoff(first=0.1, cap=30.0, jitter=True)
        # Claims of takes whose reply was lost (they may have leased a job): their jobs go
        # back before the next take, which may go out under the same claims (see
        # connections.Orphans; here every take leaves from the loop, one batch at a time).
        self._orphans: Dict[str, None] = {}
        self._completions: TurnBatches[Asked, Replied] = TurnBatches(
            self._complete_batch, LIMIT, self._completed_for_nobody
        )

    async def _redis(self) -> Any:
        # One client, shared by the takes and completions of the loop; a Cluster client
        # learns the slots before any of them goes out (connection.aio.ready: redis-py
        # routes them at random until then). Made once even when both ask at once; a
        # failed start is dropped, and the next call tries again.
        if self._client is None:
            client = async_client(url_of(self.connections.client), retries=0)
            self._client = asyncio.ensure_future(ready(client))
        made = self._client
        try:
            return await asyncio.shield(made)
        except Exception:
            if self._client is made:
                self._client = None
            raise

    async def _in_thread(self, func: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, func, *args)

    # ---- takes ----
    async def take_many(self, claims: Sequence[str], timeout: float) -> List[WorkItem]:
        """Never raises for Redis: away or refusing, it logs once, backs off and takes
        nothing (as Taker._guarded)."""
        wait = self._backoff.remaining()
        if wait > 0:
            await asyncio.sleep(min(wait, max(timeout, 0.0)))
            return []
        sent = time.monotonic()
        try:
            if self._orphans:
                await self._put_back_orphans()
            if self.connections.orphans:  # filed by a plain function's lost completion
                claims = await self._in_thread(self.taker.put_back_before, claims)
                if not claims:  # a thread is putting theirs back: take next round
                    return []
            found = await self._take_many(claims, timeout)
        except REDIS_DOWN as exc:
            if not isinstance(exc, redis.exceptions.ReadOnlyError):
                self._orphans.update(dict.fromkeys(claims))  # the take may have run
            delay = self._backoff.failed()
            if delay is not None:
                self.connections.redis_down(exc, "taking a job", delay)
            return []
        except redis.exceptions.ResponseError as exc:  # e.g. OOM: never end a slot for it
            delay = self._backoff.failed()
            if delay is not None:
                first = str(exc).splitlines()[0]
                log.error("Redis refused a take (%s); retrying in %.1f s", first, delay)
            return []
        if self._backoff.reset():
            self.connections.redis_up(sent)
        return found

    async def _take_many(self, claims: Sequence[str], timeout: float) -> List[WorkItem]:
        taker, steps = self.taker, self.connections.steps  # steps: for the keys only
        order = taker.take_order(steps.client)
        if not order:  # `-q all` in a namespace without queues yet: wait as a take would
            await asyncio.sleep(min(max(timeout, 0.0), MAX_BLOCK))
            return []
        step = take_step(steps, claims, order, taker.lease_ms, taker.worker)
        found = await step.arun(await self._redis(), self.connections.wait)
        if isinstance(found, int):
            wait = min(timeout, taker.take_wait)
            if found >= 0:
                wait = min(wait, found / 1000)
            if wait < MIN_BLOCK:  # Redis truncates to whole ms, and 0 blocks forever
                return []
            markers = [steps.keys.marker(name) for name in order]
            found = await await_then_take(await self._redis(), step, markers, round(wait, 2))
            if isinstance(found, int):
                return []
        callback_timeout = taker.recorder.callback_timeout
        items = [work_item(claim, job, callback_timeout) for claim, job in found]
        return [item for item in items if item is not None]

    async def _put_back_orphans(self) -> None:
        """Every orphan's job back at the front of its queue (raises if Redis is away:
        those not put back stay orphans)."""
        claims = list(self._orphans)
        settled = await self._in_thread(self._put_back, claims)
        for claim in settled:
            self._orphans.pop(claim, None)

    def _put_back(self, claims: Sequence[str]) -> List[str]:
        """In a thread: put back the jobs these claims hold; the claims settled (all, unless
        it raises)."""
        steps, worker = self.connections.steps, self.taker.worker
        for claim in claims:
            found = steps.claimed_job(claim)
            if found is not None:
                job_id, fields = found
                queue = text(fields.get("queue", b""))
                steps.requeue_front(claim, job_id, queue, worker, "requeued")
        return list(claims)

    def held(self, claims: Sequence[str]) -> Sequence[str]:
        orphans = [claim for claim in claims if claim in self._orphans]
        for claim in orphans:
            del self._orphans[claim]
        return orphans

    # ---- performing ----
    def runs_natively(self, item: WorkItem) -> bool:
        name = item.payload.get("func") if isinstance(item.payload, dict) else None
        if isinstance(name, bytes):
            try:
                name = name.decode()
            except UnicodeDecodeError:  # corrupt: the threaded path fails it
                return False
        return isinstance(name, str) and self.taker.runner.is_coroutine_function(name)

    async def perform(
        self, item: WorkItem, next_claim: Optional[NextClaim] = None
    ) -> Optional[WorkItem]:
        taker = self.taker
        fields, corrupt = decoded(item.payload)
        taker.refusals.ran()
        queue = fields.get("queue", "")
        log_transition(taker.worker, "started", item.item_id, queue, func=fields.get("func"))
        scope = JobScope(taker.hooks, self.connections, item.item_id, fields)
        token = current.enter(scope)  # get_current_job(): the slot's task has its own context
        try:
            started = time.monotonic()
            log_token = logs.JOB_ID.set(item.item_id)
            try:
                scope.before()
                outcome = corrupt or await taker.runner.arun(fields)
            finally:
                logs.JOB_ID.reset(log_token)
            duration = time.monotonic() - started
            if item.overran():  # the loop was blocked past its deadline: a timeout
                outcome = overrun(job_timeout(fields, taker.recorder.callback_timeout))
            # Counted by the engine in the worker's totals (SPEC 17), as taking.py does.
            item.outcome = FINISHED if outcome.exc is None else FAILED
            notify = scope.notify(outcome)
            following = await self._record(item, fields, outcome, duration, next_claim, notify)
            scope.after(outcome)
        finally:
            current.leave(token)
        return following

    async def _record(
        self,
        item: WorkItem,
        fields: Dict[str, str],
        outcome: Outcome,
        duration: float,
        chain: Optional[NextClaim],
        notify: Any,
    ) -> Optional[WorkItem]:
        taker = self.taker
        if outcome.exc is not None or outcome.next_stage is not None:  # rare: threaded path
            args = (item, fields, outcome, duration, chain, notify)
            return await self._in_thread(taker.record, *args)
        take = None
        next_claim = chain() if chain is not None else None
        if next_claim is not None:
            order = taker.take_order(self.connections.steps.client, keep_on_error=True)
            take = (next_claim, order, taker.lease_ms) if order else None
        queue = fields.get("queue", "")
        completion = (item.claim, item.item_id, queue, outcome.result, outcome.serializer, "")
        try:
            code, taken = await self._completions.call((completion, take))
        except REDIS_DOWN as exc:
            self.connections.redis_down(exc, "recording a job's outcome")
            if take is not None:  # the step may have run: what it took goes back first
                self._orphans[take[0]] = None
            record = taker.recorder.record
            again = lambda: record(item, fields, outcome, duration, notify=notify)  # noqa: E731
            await self._in_thread(until_recorded, self.connections, again)
            return None
        if code is CompleteReply.RECORDED:
            func = fields.get("func")
            log_transition(taker.worker, "finished", item.item_id, queue, duration, func=func)
        else:
            await self._in_thread(taker.recorder.stale, item, fields)
        if take is None:
            return None
        return work_item(take[0], taken, taker.recorder.callback_timeout)

    # ---- completions of one turn ----
    async def _complete_batch(self, asked: Sequence[Asked]) -> List[Replied]:
        completions, order, lease_ms = batch_of(asked)
        steps = self.connections.steps
        step = complete_many_step(steps, completions, order, lease_ms, self.taker.worker)
        return await step.arun(await self._redis(), self.connections.wait)

    def _completed_for_nobody(self, asked: Asked, replied: Replied) -> None:
        """The slot was ended while its completion travelled: the job it took next goes back
        untouched (the completion itself stands, fenced by its claim)."""
        _, take = asked
        if take is None:
            return
        following = work_item(take[0], replied[1], self.taker.recorder.callback_timeout)
        if following is not None:
            loop = asyncio.get_running_loop()
            loop.run_in_executor(None, self.taker.give_back, following)
