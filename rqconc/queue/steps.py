"""The Lua steps (rqconc/queue/lua/*.lua): loaded once per server, called by SHA.

`Steps` wraps each script with the keys it needs, built by `KeySpace`, so the rest of the
code never lists KEYS by hand. Calls go straight to EVALSHA (the SHA is computed locally);
a server that does not know the script yet (first use, or after a restart flushed its
script cache) answers NOSCRIPT, and the script is loaded and the call repeated once.
"""

from __future__ import annotations

import hashlib
import re
import time
from importlib import resources
from typing import Any, Dict, List, Optional, Sequence, Tuple

import redis

from rqconc.queue.keys import KeySpace

SCRIPT_NAMES = (
    "enqueue",
    "take",
    "renew",
    "complete",
    "fail",
    "requeue_front",
    "recover",
    "cancel",
    "await",
    "trim_ended",
)
# `--#include NAME` in a script is replaced by lua/include/NAME.lua: Redis scripts cannot
# call one another, and the steps that end a job must release its dependents identically.
_INCLUDE = re.compile(r"^--#include (\w+)$", re.MULTILINE)

# How many due scheduled jobs one take promotes per queue: bounds the cost of a take.
PROMOTE_BATCH = 100
# How long done:<id> outlives a job kept for 0 s, so that waiters already blocked see it.
DONE_GRACE_SECONDS = 10
# Bounds of one maintenance trim: entries dropped per set, queues per script call (each
# call holds Redis while it runs).
TRIM_BATCH = 1000
TRIM_QUEUES_PER_CALL = 50


class Script:
    """One Lua file: its source and SHA1, callable on any client."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = _expand(_read(f"{name}.lua"))
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()

    def __call__(self, client: redis.Redis, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            client.script_load(self.source)
            return client.evalsha(self.sha, len(keys), *keys, *args)


def _read(relative: str) -> str:
    return resources.files("rqconc.queue").joinpath("lua", relative).read_text()


def _expand(source: str) -> str:
    return _INCLUDE.sub(lambda m: _read(f"include/{m.group(1)}.lua"), source)


_SCRIPTS: Dict[str, Script] = {}


def script(name: str) -> Script:
    """The script `name`, read from the package once per process (read-only afterwards)."""
    if name not in _SCRIPTS:
        _SCRIPTS[name] = Script(name)
    return _SCRIPTS[name]


# Far longer than a take can be on its way to Redis: afterwards the key just expires.
REVOKED_MS = 600_000


def now_ms() -> int:
    return int(time.time() * 1000)


def text(value: Any) -> str:
    """A reply as str, whatever the client's decode_responses (bytes that are not UTF-8,
    which only a corrupt write can store, are shown with replacement characters)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# The job fields a take returns, in the order of TAKE_FIELDS in lua/include/take.lua.
TAKE_FIELDS = (
    "func",
    "args",
    "kwargs",
    "serializer",
    "timeout",
    "queue",
    "attempts",
    "retry",
    "callback_of",
    "callback_kind",
    "parent_serializer",
    "parent_result",
    "parent_exc",
)


def _taken(reply: Any) -> Any:
    """A take's reply as (id, fields present), or the earliest due time (ms, -1: none)."""
    if not isinstance(reply, list):
        return int(reply)
    fields = {name: value for name, value in zip(TAKE_FIELDS, reply[1:]) if value is not None}
    return text(reply[0]), fields


class Steps:
    """The Lua steps bound to one client and namespace."""

    def __init__(self, client: redis.Redis, keys: KeySpace) -> None:
        self.client = client
        self.keys = keys

    def enqueue(
        self,
        queue: str,
        jobs: Sequence[Tuple[str, Dict[str, Any]]],
        priority: int = 1,
        due_ms: Optional[int] = None,
        common: Optional[Dict[str, Any]] = None,
        fresh_ids: bool = False,
        now: Optional[int] = None,
    ) -> Optional[Tuple[str, str]]:
        """Store jobs (id, fields) of one priority, each hash also holding the `common`
        fields, `queue` and `created_at` (`now`, ms). None when stored, else why not:
        ("exists", id) or ("missing parent", id); then nothing was written. `fresh_ids`: the
        ids were just generated at random, so they need no check that they are free."""
        k = self.keys
        common = common or {}
        keys = [k.seq, k.queues, k.queue(queue), k.marker(queue), k.scheduled(queue), k.events]
        ids = "" if fresh_ids else "1"
        if (
            fresh_ids
            and due_ms is None
            and len(jobs) == 1
            and "depends_on" not in common
            and "depends_on" not in jobs[0][1]
        ):
            ids = "plain"  # the step's fast path
        args: List[Any] = [
            queue,
            now_ms() if now is None else now,
            "" if due_ms is None else due_ms,
            len(jobs),
            k.prefix,
            priority,
            ids,
            len(common),
        ]
        for pair in common.items():
            args += pair
        job_prefix = k.job_prefix
        for job_id, fields in jobs:
            keys.append(job_prefix + job_id)
            args += (job_id, len(fields))
            for pair in fields.items():
                args += pair
        code, detail = script("enqueue")(self.client, keys, args)
        if code == 1:
            return None
        return ("exists" if code == 0 else "missing parent"), text(detail)

    def take(self, claim: str, queues: Sequence[str], lease_ms: int, worker: str) -> Any:
        """The taken job as (id, fields) or, if none, the earliest due time (ms, or -1)."""
        keys, args = self._take_call(claim, queues, lease_ms, worker)
        return _taken(script("take")(self.client, keys, args))

    def wait_then_take(
        self, timeout: float, claim: str, queues: Sequence[str], lease_ms: int, worker: str
    ) -> Any:
        """Block up to `timeout` s on the queues' markers, then take, in one round trip: a
        blocked client's next command waits in Redis' input buffer and runs the moment the
        wait ends, so a woken child does not pay a second round trip before its job starts.
        Needs a `DirectConnection`. Returns as `take`; -1 when the take script is not loaded
        (the next plain take loads it)."""
        keys, args = self._take_call(claim, queues, lease_ms, worker)
        take = script("take")
        markers = [self.keys.marker(name) for name in queues]
        _, reply = self.client.pipelined(  # type: ignore[attr-defined]
            ("BZPOPMIN", *markers, timeout), ("EVALSHA", take.sha, len(keys), *keys, *args)
        )
        if isinstance(reply, redis.exceptions.NoScriptError):
            return -1
        if isinstance(reply, Exception):
            raise reply
        return _taken(reply)

    def _take_call(
        self, claim: str, queues: Sequence[str], lease_ms: int, worker: str
    ) -> Tuple[List[str], List[Any]]:
        k = self.keys
        keys = [k.seq, k.active, k.claims, k.events]
        for name in queues:
            keys += [k.queue(name), k.marker(name), k.scheduled(name), k.started(name)]
        return keys, [claim, lease_ms, worker, PROMOTE_BATCH, k.prefix]

    def requeue_failed(self, queue: str, job_id: str) -> bool:
        """Move a dead letter back into its queue; False if it is not one."""
        k = self.keys
        keys = [
            k.seq,
            k.failed(queue),
            k.job(job_id),
            k.done(job_id),
            k.events,
            k.failed_expiry(queue),
        ]
        return script("requeue_failed")(self.client, keys, [job_id, k.prefix]) == 1

    def purge_failed(self, queue: str, job_ids: Sequence[str]) -> int:
        keys = [self.keys.failed(queue), self.keys.failed_expiry(queue)]
        for job_id in job_ids:
            keys += [self.keys.job(job_id), self.keys.done(job_id)]
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
        Without `next_take`: True, or False when the claim is stale (nothing written).
        With `next_take` = (next claim, queues, lease ms) the same step takes the next job:
        returns (True, what `take` returns) or (False, None)."""
        k = self.keys
        keys = [
            k.active,
            k.claims,
            k.job(job_id),
            k.started(queue),
            k.finished(queue),
            k.done(job_id),
            k.seq,
            k.events,
            k.canceling,
        ]
        args = [claim, job_id, result, serializer, DONE_GRACE_SECONDS, k.prefix, worker]
        if next_take is None:
            args += ["", 0, 0, 0]
        else:
            next_claim, queues, lease_ms = next_take
            args += [next_claim, lease_ms, PROMOTE_BATCH, len(queues)]
            for name in queues:
                keys += [k.queue(name), k.marker(name), k.scheduled(name), k.started(name)]
        if next_stage is not None:
            next_id, fields = next_stage
            keys += [k.queues, k.job(next_id), k.done(next_id)]
            args += [next_id, fields["queue"], len(fields)]
            for name, value in fields.items():
                args += [name, value]
        reply = script("complete")(self.client, keys, args)
        recorded = reply[0] == 1
        if next_take is None:
            return recorded
        return recorded, (_taken(reply[1]) if recorded else None)

    def fail(
        self,
        claim: str,
        job_id: str,
        queue: str,
        exc: Tuple[str, str, str],
        retry_in_ms: Optional[int] = None,
        worker: str = "",
    ) -> int:
        """1: failed for good, 2: scheduled for a retry `retry_in_ms` from now (on Redis'
        clock), -1: stale claim (nothing written)."""
        k = self.keys
        keys = [
            k.active,
            k.claims,
            k.job(job_id),
            k.started(queue),
            k.failed(queue),
            k.scheduled(queue),
            k.done(job_id),
            k.seq,
            k.events,
            k.canceling,
            k.failed_expiry(queue),
        ]
        args = [
            claim,
            job_id,
            *exc,
            "" if retry_in_ms is None else retry_in_ms,
            k.prefix,
            worker,
        ]
        return script("fail")(self.client, keys, args)

    def requeue_front(
        self, claim: str, job_id: str, queue: str, worker: str = "", event: str = "requeued"
    ) -> bool:
        k = self.keys
        keys = [k.seq, k.active, k.claims, k.job(job_id), k.started(queue), k.events, k.canceling]
        args = [claim, job_id, k.prefix, worker, event]
        return script("requeue_front")(self.client, keys, args) == 1

    def cancel(self, job_id: str, claim: str = "", worker: str = "") -> int:
        """1: canceled, 2: running and asked to stop, 0: already ended or stale claim,
        -1: no such job."""
        k = self.keys
        keys = [k.job(job_id), k.canceling, k.active, k.claims, k.seq, k.events]
        args = [job_id, k.prefix, claim, worker]
        return int(script("cancel")(self.client, keys, args))

    def await_outcome(self, job_id: str) -> Tuple[int, List[Any]]:
        """(1, [outcome]) when pushed; (0, []) when the job does not exist; else
        (2, [status, serializer, result, exc_type, exc_message, traceback]), and the job is
        marked as waited for if it has not ended."""
        reply = script("await")(self.client, [self.keys.job(job_id), self.keys.done(job_id)], [])
        return int(reply[0]), list(reply[1:])

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

    def recover(self, max_lost: int, limit: int = 500) -> Tuple[int, int]:
        """Requeue (or dead-letter) jobs whose lease expired: (requeued, dead)."""
        k = self.keys
        # Redis' clock, as the step's own check: a recovering worker's clock may be off.
        seconds, micros = self.client.time()
        now = seconds * 1000 + micros // 1000
        expired = [
            text(i) for i in self.client.zrangebyscore(k.active, "-inf", now, start=0, num=limit)
        ]
        if not expired:
            return 0, 0
        pipe = self.client.pipeline(transaction=False)
        for job_id in expired:
            pipe.hmget(k.job(job_id), "queue", "token")
        keys = [k.seq, k.active, k.claims, k.events, k.canceling]
        args: List[Any] = [max_lost, k.prefix]
        for job_id, (queue, token) in zip(expired, pipe.execute()):
            name = text(queue) if queue is not None else "-"
            keys += [
                k.job(job_id),
                k.started(name),
                k.failed(name),
                k.failed_expiry(name),
                k.done(job_id),
            ]
            args += [job_id, text(token) if token is not None else ""]
        requeued, dead = script("recover")(self.client, keys, args)
        return int(requeued), int(dead)

    def trim_ended(self, limit: int = TRIM_BATCH) -> int:
        """Drop expired entries from every known queue's finished and dead-letter sets (up
        to `limit` per set); returns how many."""
        k = self.keys
        names = sorted(text(n) for n in self.client.smembers(k.queues))
        dropped = 0
        for start in range(0, len(names), TRIM_QUEUES_PER_CALL):
            keys: List[str] = []
            for name in names[start : start + TRIM_QUEUES_PER_CALL]:
                keys += [k.finished(name), k.failed(name), k.failed_expiry(name)]
            dropped += int(script("trim_ended")(self.client, keys, [limit]))
        return dropped
