"""The Lua steps (rqconc/lua/*.lua): loaded once per server, called by SHA.

`Steps` wraps each script with the keys it needs, built by `KeySpace`, so the rest of the
code never lists KEYS by hand. Calls go straight to EVALSHA (the SHA is computed locally);
a server that does not know the script yet (first use, or after a restart flushed its
script cache) answers NOSCRIPT, and the script is loaded and the call repeated once.
"""
from __future__ import annotations

import hashlib
import time
from importlib import resources
from typing import Any, Dict, List, Optional, Sequence, Tuple

import redis

from rqconc.keys import KeySpace

SCRIPT_NAMES = ("enqueue", "take", "renew", "complete", "fail", "requeue_front", "recover")

# How many due scheduled jobs one take promotes per queue: bounds the cost of a take.
PROMOTE_BATCH = 100
# How long done:<id> outlives a job kept for 0 s, so that waiters already blocked see it.
DONE_GRACE_SECONDS = 10


class Script:
    """One Lua file: its source and SHA1, callable on any client."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = resources.files("rqconc").joinpath("lua", f"{name}.lua").read_text()
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()

    def __call__(self, client: redis.Redis, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            client.script_load(self.source)
            return client.evalsha(self.sha, len(keys), *keys, *args)


_SCRIPTS: Dict[str, Script] = {}


def script(name: str) -> Script:
    """The script `name`, read from the package once per process (read-only afterwards)."""
    if name not in _SCRIPTS:
        _SCRIPTS[name] = Script(name)
    return _SCRIPTS[name]


def now_ms() -> int:
    return int(time.time() * 1000)


def text(value: Any) -> str:
    """A reply as str, whatever the client's decode_responses."""
    return value.decode() if isinstance(value, bytes) else str(value)


class Steps:
    """The Lua steps bound to one client and namespace."""

    def __init__(self, client: redis.Redis, keys: KeySpace) -> None:
        self.client = client
        self.keys = keys

    def enqueue(self, queue: str, jobs: Sequence[Tuple[str, int, Dict[str, Any]]],
                due_ms: Optional[int] = None) -> Optional[str]:
        """Store jobs (id, priority, fields); returns the id that already existed, if any."""
        k = self.keys
        keys = [k.seq, k.queues, k.queue(queue), k.marker(queue), k.scheduled(queue)]
        args: List[Any] = [queue, now_ms(), "" if due_ms is None else due_ms, len(jobs)]
        for job_id, priority, fields in jobs:
            keys += [k.job(job_id), k.done(job_id)]
            args += [job_id, priority, len(fields)]
            for name, value in fields.items():
                args += [name, value]
        stored, detail = script("enqueue")(self.client, keys, args)
        return None if stored else text(detail)

    def take(self, claim: str, queues: Sequence[str], lease_ms: int, worker: str) -> Any:
        """The taken job as (id, fields) or, if none, the earliest due time (ms, or -1)."""
        k = self.keys
        keys = [k.seq, k.active, k.claims]
        for name in queues:
            keys += [k.queue(name), k.marker(name), k.scheduled(name), k.started(name)]
        reply = script("take")(self.client, keys,
                               [claim, now_ms(), lease_ms, worker, PROMOTE_BATCH, k.job_prefix])
        if not isinstance(reply, list):
            return int(reply)
        fields = {text(reply[i]): reply[i + 1] for i in range(1, len(reply), 2)}
        return text(reply[0]), fields

    def requeue_failed(self, queue: str, job_id: str) -> bool:
        """Move a dead letter back into its queue; False if it is not one."""
        k = self.keys
        keys = [k.seq, k.failed(queue), k.queue(queue), k.marker(queue), k.job(job_id),
                k.done(job_id)]
        return script("requeue_failed")(self.client, keys, [job_id, now_ms()]) == 1

    def purge_failed(self, queue: str, job_ids: Sequence[str]) -> int:
        keys = [self.keys.failed(queue)]
        for job_id in job_ids:
            keys += [self.keys.job(job_id), self.keys.done(job_id)]
        return int(script("purge_failed")(self.client, keys, list(job_ids)))

    def renew(self, claims: Sequence[str], lease_ms: int) -> int:
        if not claims:
            return 0
        return script("renew")(self.client, [self.keys.active, self.keys.claims],
                               [now_ms() + lease_ms, *claims])

    def complete(self, claim: str, job_id: str, queue: str, result: Any, serializer: str) -> bool:
        """Record the return value; False when the claim is stale (nothing written)."""
        k = self.keys
        keys = [k.active, k.claims, k.job(job_id), k.started(queue), k.finished(queue),
                k.done(job_id)]
        args = [claim, job_id, now_ms(), result, serializer, DONE_GRACE_SECONDS]
        return script("complete")(self.client, keys, args) == 1

    def fail(self, claim: str, job_id: str, queue: str, exc: Tuple[str, str, str],
             retry_at_ms: Optional[int] = None) -> int:
        """1: failed for good, 2: scheduled for a retry, -1: stale claim (nothing written)."""
        k = self.keys
        keys = [k.active, k.claims, k.job(job_id), k.started(queue), k.failed(queue),
                k.scheduled(queue), k.done(job_id)]
        args = [claim, job_id, now_ms(), *exc, "" if retry_at_ms is None else retry_at_ms]
        return script("fail")(self.client, keys, args)

    def requeue_front(self, claim: str, job_id: str, queue: str) -> bool:
        k = self.keys
        keys = [k.seq, k.active, k.claims, k.job(job_id), k.queue(queue), k.marker(queue),
                k.started(queue)]
        return script("requeue_front")(self.client, keys, [claim, job_id]) == 1

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
        now = now_ms()
        expired = [text(i) for i in
                   self.client.zrangebyscore(k.active, "-inf", now, start=0, num=limit)]
        if not expired:
            return 0, 0
        pipe = self.client.pipeline(transaction=False)
        for job_id in expired:
            pipe.hmget(k.job(job_id), "queue", "token")
        keys, args = [k.seq, k.active, k.claims], [now, max_lost]
        for job_id, (queue, token) in zip(expired, pipe.execute()):
            name = text(queue) if queue is not None else "-"
            keys += [k.job(job_id), k.queue(name), k.marker(name), k.started(name),
                     k.failed(name), k.done(job_id)]
            args += [job_id, text(token) if token is not None else ""]
        requeued, dead = script("recover")(self.client, keys, args)
        return int(requeued), int(dead)
