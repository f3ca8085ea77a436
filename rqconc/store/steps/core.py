"""The one caller of the Lua steps (rqconc/store/lua/*.lua, loaded by scripts.py).

`Steps` wraps each step of a job's lifecycle (enqueue, take, renew, complete, fail, requeue,
cancel, await) with the keys it needs, built by `KeySpace`, so the rest of the code never
lists KEYS by hand, and turns its reply into the enum of scripts.py. The steps a producer
runs are built in producer.py, for either transport; `Steps` runs them on its client. Its
other siblings in steps/ do the same for the other concerns (maintenance, cron, batches,
limits, metrics, reporting); no other module calls a script (tests/store/test_lua_steps.py
holds this).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import redis

from rqconc.connection.replicas import ReplicaWait
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import (
    AwaitReply,
    CancelReply,
    CompleteReply,
    EnqueueGroupReply,
    EnqueueReply,
    FailReply,
    PromoteReply,
    script,
    taken,
    text,
)
from rqconc.store.steps.bound import BoundSteps
from rqconc.store.steps.producer import await_step, cancel_step, enqueue_group_step, enqueue_step

# Far longer than a take can be on its way to Redis: afterwards the key just expires.
REVOKED_MS = 600_000
COMPLETE_REPLIES = {int(code): code for code in CompleteReply}


class Steps(BoundSteps):
    """The Lua steps bound to one client and namespace."""

    def __init__(
        self, client: redis.Redis, keys: KeySpace, wait: Optional[ReplicaWait] = None
    ) -> None:
        super().__init__(client, keys, wait)
        # take_keys of each take order seen: the same few orders come back for every job.
        self._take_keys: Dict[Tuple[str, ...], List[str]] = {}
        # What `complete` (every job's step) names the same way each time, built once: the
        # key names cost a dozen calls a job otherwise (bench/PROFILE.md).
        self._job_prefix = keys.job("")
        self._held = (keys.active, keys.claims)
        self._shared = (keys.seq, keys.events)
        self._ended: Dict[str, Tuple[str, str]] = {}  # queue -> (started, finished)

    def enqueue(
        self,
        queue: str,
        jobs: Sequence[Tuple[str, Dict[str, Any]]],
        priority: int = 1,
        due_ms: Optional[int] = None,
        common: Optional[Dict[str, Any]] = None,
        fresh_ids: bool = False,
        now: Optional[int] = None,
        mark: bool = False,
    ) -> Optional[Tuple[EnqueueReply, str]]:
        """As `enqueue_step`, run here."""
        step = enqueue_step(self.keys, queue, jobs, priority, due_ms, common, fresh_ids, now, mark)
        return self.run(step)

    def enqueue_group(
        self,
        queue: str,
        group_id: str,
        jobs: Sequence[Tuple[str, int, Dict[str, Any]]],
        chord: Optional[Tuple[str, Dict[str, Any]]],
        ttl: int,
    ) -> EnqueueGroupReply:
        """As `enqueue_group_step`, run here."""
        return self.run(enqueue_group_step(self.keys, queue, group_id, jobs, chord, ttl))

    def take(self, claim: str, queues: Sequence[str], lease_ms: int, worker: str) -> Any:
        """The taken job as (id, fields) or, if none, the delay (ms, by Redis' clock) until
        the earliest scheduled job is due (-1: none scheduled)."""
        keys, args = self.take_call(claim, queues, lease_ms, worker)
        return taken(script("take")(self.client, keys, args))

    def wait_then_take(
        self, timeout: float, claim: str, queues: Sequence[str], lease_ms: int, worker: str
    ) -> Any:
        """Block up to `timeout` s on the queues' markers, then take, in one round trip: a
        blocked client's next command waits in Redis' input buffer and runs the moment the
        wait ends, so a woken child does not pay a second round trip before its job starts.
        Needs a `DirectConnection`. Returns as `take`; -1 when the take script (or the
        library) is not loaded (the next plain take loads it)."""
        keys, args = self.take_call(claim, queues, lease_ms, worker)
        take = script("take")
        markers = [self.keys.marker(name) for name in queues]
        _, reply = self.client.pipelined(
            ("BZPOPMIN", *markers, timeout), take.command(self.client, keys, args)
        )
        if take.missing(reply):
            return -1
        if isinstance(reply, Exception):
            raise reply
        return taken(reply)

    def take_call(
        self, claim: str, queues: Sequence[str], lease_ms: int, worker: str
    ) -> Tuple[List[str], List[Any]]:
        k = self.keys
        keys = [k.seq, k.active, k.claims, k.events, *self.take_keys(queues)]
        return keys, [claim, lease_ms, worker, k.prefix]

    def take_keys(self, queues: Sequence[str]) -> List[str]:
        """The keys a take reads for each queue, in the order of lua/include/take.lua."""
        order = tuple(queues)
        known = self._take_keys.get(order)
        if known is None:
            if len(self._take_keys) > 64:  # `-q all` orders vary with the queues: bounded
                self._take_keys.clear()
            k = self.keys
            known = self._take_keys[order] = [
                key
                for name in order
                for key in (k.queue(name), k.marker(name), k.scheduled(name), k.started(name))
            ]
        return known

    def requeue_failed(self, queue: str, job_id: str) -> bool:
        """Move a dead letter back into its queue; False if it is not one. ValueError if
        another job holds its unique key (nothing changed)."""
        k = self.keys
        keys = [k.seq, k.failed(queue), k.job(job_id), k.done(job_id), k.events]
        keys.append(k.failed_expiry(queue))
        reply = script("requeue_failed")(self.client, keys, [job_id, k.prefix])
        if isinstance(reply, list):
            holder, unique = text(reply[1]), text(reply[2])
            raise ValueError(
                f"cannot requeue job {job_id}: job {holder} holds its unique_key {unique!r} "
                "(waiting, running, or ended within its unique_for); requeue it once that "
                "job has ended and its unique_for passed"
            )
        return bool(reply == 1)

    def purge_failed(self, queue: str, job_ids: Sequence[str]) -> int:
        keys = [self.keys.failed(queue), self.keys.failed_expiry(queue)]
        for job_id in job_ids:
            keys += [self.keys.job(job_id), self.keys.done(job_id), self.keys.log(job_id)]
        return int(script("purge_failed")(self.client, keys, list(job_ids)))

    def revoke(self, claims: Sequence[str]) -> None:
        """Make every later take under these claims take nothing. A child ended mid-take (an
        abandoned thread, a process whose request was already on the wire) could otherwise
        lease a job after its claims were requeued, and that job would wait out its lease."""
        pipe = self.client.pipeline(transaction=False)
        for claim in claims:
            pipe.set(self.keys.revoked(claim), 1, px=REVOKED_MS)
        pipe.execute()

    def renew(self, claims: Sequence[str], lease_ms: int) -> int:
        if not claims:
            return 0
        return script("renew")(
            self.client, [self.keys.active, self.keys.claims], [lease_ms, *claims]
        )

    def complete(
        self,
        claim: str,
        job_id: str,
        queue: str,
        result: Any,
        serializer: str,
        worker: str = "",
        next_stage: Optional[Tuple[str, Dict[str, Any]]] = None,
        next_take: Optional[Tuple[str, Sequence[str], int]] = None,
    ) -> Any:
        """Record the return value (and enqueue the flow's next stage, given as (id, fields)).
        Without `next_take`: RECORDED, STALE claim or NEXT_ID_TAKEN (both: nothing written).
        With `next_take` = (next claim, queues, lease ms) the same step takes the next job:
        returns (RECORDED, what `take` returns) or (the refusal, None)."""
        k = self.keys
        ended = self._ended.get(queue) or self._ended_keys(queue)
        # complete.lua derives NS from keys[0] (active) and knows its two constants: each key
        # or argument fewer saves Redis ~1,150 instructions a job (bench/PROFILE.md).
        keys = [*self._held, self._job_prefix + job_id, *ended, *self._shared]
        args = [claim, job_id, result, serializer, worker]
        if next_take is None:
            args += ["", 0, 0]
        else:
            next_claim, queues, lease_ms = next_take
            args += [next_claim, lease_ms, len(queues)]
            keys += self.take_keys(queues)
        if next_stage is not None:
            next_id, fields = next_stage
            keys += [k.queues, k.job(next_id), k.done(next_id)]
            args += [next_id, fields["queue"], len(fields)]
            for name, value in fields.items():
                args += [name, value]
        reply = script("complete")(self.client, keys, args)
        code = COMPLETE_REPLIES[int(reply[0])]  # not CompleteReply(...): an enum call a job
        if next_take is None:
            return code
        return code, (taken(reply[1]) if code is CompleteReply.RECORDED else None)

    def _ended_keys(self, queue: str) -> Tuple[str, str]:
        """started:<queue> and finished:<queue>, kept for the few queues a worker serves."""
        if len(self._ended) > 64:  # `-q all` may meet many queues: bounded
            self._ended.clear()
        pair = self._ended[queue] = (self.keys.started(queue), self.keys.finished(queue))
        return pair

    def fail(
        self,
        claim: str,
        job_id: str,
        queue: str,
        exc: Tuple[str, str, str],
        retry_in_ms: Optional[int] = None,
        worker: str = "",
    ) -> FailReply:
        """FAILED for good, RETRYING (scheduled `retry_in_ms` from now, on Redis' clock), or
        STALE claim (nothing written)."""
        k = self.keys
        keys = [k.active, k.claims, k.job(job_id), k.started(queue), k.failed(queue)]
        keys += [k.scheduled(queue), k.done(job_id), k.seq, k.events, k.canceling]
        keys.append(k.failed_expiry(queue))
        args = [
            claim,
            job_id,
            *exc,
            "" if retry_in_ms is None else retry_in_ms,
            k.prefix,
            worker,
        ]
        return FailReply(script("fail")(self.client, keys, args))

    def requeue_front(
        self,
        claim: str,
        job_id: str,
        queue: str,
        worker: str = "",
        event: str = "requeued",
        front: bool = True,
    ) -> bool:
        k = self.keys
        keys = [k.seq, k.active, k.claims, k.job(job_id), k.started(queue), k.events, k.canceling]
        args = [claim, job_id, k.prefix, worker, event, "" if front else "back"]
        return script("requeue_front")(self.client, keys, args) == 1

    def requeue_claims(
        self, claims: Sequence[str], worker: str, event: str = "interrupted"
    ) -> List[Tuple[str, str, str]]:
        """Put the jobs these claims hold back at the front of their queues, in one step (a
        cold shutdown's children, requeue_claims.lua): (id, queue, function) of each."""
        k = self.keys
        keys = [k.seq, k.active, k.claims, k.events, k.canceling]
        reply = script("requeue_claims")(self.client, keys, [k.prefix, worker, event, *claims])
        values = [text(value) for value in reply]
        return [(values[i], values[i + 1], values[i + 2]) for i in range(0, len(values), 3)]

    def cancel(self, job_id: str, claim: str = "", worker: str = "") -> CancelReply:
        return self.run(cancel_step(self.keys, job_id, claim, worker))

    def promote(self, queue: str, job_id: str) -> PromoteReply:
        """Move a scheduled or deferred job of `queue` to the back of that queue."""
        k = self.keys
        keys = [k.job(job_id), k.scheduled(queue), k.deferred(queue), k.seq, k.events]
        return PromoteReply(script("promote")(self.client, keys, [job_id, k.prefix, queue]))

    def await_outcome(self, job_id: str) -> Tuple[AwaitReply, List[Any]]:
        return self.run(await_step(self.keys, job_id))

    def claimed_job(self, claim: str) -> Optional[Tuple[str, Dict[str, Any]]]:
        """The job a claim currently holds, as (id, fields), or None if the claim is stale."""
        job_id = self.client.hget(self.keys.claims, claim)
        if job_id is None:
            return None
        raw = self.client.hgetall(self.keys.job(text(job_id)))
        fields = {text(name): value for name, value in raw.items()}
        if not fields or text(fields.get("token", "")) != claim:
            return None
        return text(job_id), fields
