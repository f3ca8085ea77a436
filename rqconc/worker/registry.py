"""Workers in Redis: each supervisor registers itself and heartbeats from its tick.

A worker is one hash `{ns}:worker:<name>` with a TTL, plus its entry in the `{ns}:workers`
sorted set scored by the moment that TTL runs out. A supervisor whose loop is wedged stops
heartbeating, so it drops out of the listing after its TTL even if its process lives.
Every time here is Redis' (clock.py): workers on hosts whose clocks disagree must not drop
one another from the listing.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

import redis

from rqconc.engine.source import SupervisorInfo
from rqconc.store.clock import redis_time, redis_time_ms
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import text

DEFAULT_TTL = 420  # seconds without a heartbeat after which a worker counts as gone
# Seconds without a heartbeat after which a listed worker shows as `stale`: supervisors beat
# about once a second, so this is several missed beats (a SIGKILLed or wedged worker), long
# before the TTL, which alone decides when its jobs are recovered.
STALE_AFTER = 10.0


def worker_state(info: SupervisorInfo) -> str:
    """started | idle | busy | suspended, as stored (listings may show `stale` instead)."""
    if info.suspended:
        return "suspended"
    return "busy" if info.busy else "idle"


class WorkerRegistry:
    """The registry entries of one namespace."""

    def __init__(self, client: redis.Redis, keys: KeySpace, ttl: float = DEFAULT_TTL) -> None:
        self.client = client
        self.keys = keys
        self.ttl = ttl

    def register(self, info: SupervisorInfo, queues: Sequence[str]) -> None:
        """A supervisor came up: its entry, state `started`."""
        self._write(info, queues, "started")

    def heartbeat(self, info: SupervisorInfo, queues: Sequence[str]) -> None:
        self._write(info, queues, worker_state(info))

    def unregister(self, name: str) -> None:
        pipe = self.client.pipeline(transaction=False)
        pipe.delete(self.keys.worker(name))
        pipe.zrem(self.keys.workers, name)
        pipe.execute()

    def _write(self, info: SupervisorInfo, queues: Sequence[str], state: str) -> None:
        now = redis_time_ms(self.client, self.keys)
        ttl_ms = int(self.ttl * 1000)
        key = self.keys.worker(info.name)
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(
            key,
            mapping={
                "name": info.name,
                "host": info.host,
                "pid": info.pid,
                "backend": info.backend,
                "size": info.size,
                "slots": info.slots,
                "queues": ",".join(queues),
                "state": state,
                "busy": info.busy,
                "idle": info.idle,
                "current_jobs": json.dumps(list(info.current_items)),
                "last_heartbeat": now,
                "ttl": self.ttl,
                # Totals since the worker started (SPEC 17): counted by its supervisor in
                # memory, written with each heartbeat, so a job pays nothing for them. A
                # worker that dies keeps its last ones until its entry expires (the TTL).
                "jobs_finished": info.totals.finished,
                "jobs_failed": info.totals.failed,
                "busy_seconds": f"{info.totals.busy_seconds:.3f}",
            },
        )
        pipe.hsetnx(key, "birth", now)
        pipe.pexpire(key, ttl_ms)
        pipe.zadd(self.keys.workers, {info.name: now + ttl_ms})
        # The heartbeats keep the set clean, so that reading it never writes (the dashboard's
        # GETs change nothing, SPEC 9): entries whose TTL ran out go here.
        pipe.zremrangebyscore(self.keys.workers, "-inf", now)
        pipe.execute()

    def list(self) -> List[Dict[str, Any]]:
        """The live workers, by name; entries not heard from within their TTL are left out
        (and removed by the next heartbeat of any worker: a listing only reads)."""
        now = redis_time_ms(self.client, self.keys)
        names = [text(n) for n in self.client.zrangebyscore(self.keys.workers, f"({now}", "+inf")]
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self.keys.worker(name))
        workers = [_parse(raw, now / 1000) for raw in pipe.execute() if raw]
        return sorted(workers, key=lambda worker: worker["name"])


def _parse(raw: Dict[Any, Any], now: float) -> Dict[str, Any]:
    fields = {text(k): text(v) for k, v in raw.items()}
    worker = {
        "name": fields.get("name", ""),
        "host": fields.get("host", ""),
        "pid": int(fields.get("pid", 0)),
        "backend": fields.get("backend", ""),
        "size": int(fields.get("size", 0)),
        "slots": int(fields.get("slots", 1)),
        "busy": int(fields.get("busy", 0)),
        "idle": int(fields.get("idle", 0)),
        "state": fields.get("state", ""),
        "queues": [q for q in fields.get("queues", "").split(",") if q],
        "current_jobs": json.loads(fields.get("current_jobs", "[]")),
        "birth": int(fields.get("birth", 0)) / 1000,
        "last_heartbeat": int(fields.get("last_heartbeat", 0)) / 1000,
        "totals": {
            "finished": int(fields.get("jobs_finished", 0)),
            "failed": int(fields.get("jobs_failed", 0)),
            "busy_seconds": float(fields.get("busy_seconds", 0)),
        },
    }
    if now - worker["last_heartbeat"] > STALE_AFTER:  # its stored state is old news
        worker["state"] = "stale"
    return worker


def list_workers(client: redis.Redis, namespace: str = "rqconc") -> List[Dict[str, Any]]:
    """Live workers of a namespace as dicts (name, host, pid, backend, size, busy, idle,
    state, queues, current_jobs, birth, last_heartbeat; times as Unix seconds; totals:
    finished, failed, busy_seconds since it started, as of its last heartbeat). The state is
    `stale` once the heartbeat is more than STALE_AFTER seconds old."""
    return WorkerRegistry(client, KeySpace(namespace)).list()


def live_count(client: redis.Redis, namespace: str = "rqconc") -> int:
    """How many workers of a namespace are registered and not expired (Redis' clock)."""
    keys = KeySpace(namespace)
    return int(client.zcount(keys.workers, redis_time(client, keys), "+inf"))


def heartbeat_age(client: redis.Redis, name: str, namespace: str = "rqconc") -> Optional[float]:
    """Seconds since worker `name` last heartbeat, or None when it is not registered or
    that heartbeat is older than its TTL (`rqconc ping --worker`)."""
    raw = client.hgetall(KeySpace(namespace).worker(name))
    fields = {text(k): text(v) for k, v in raw.items()}
    if "last_heartbeat" not in fields:
        return None
    age = redis_time(client, KeySpace(namespace)) - int(fields["last_heartbeat"]) / 1000
    ttl = float(fields.get("ttl") or DEFAULT_TTL)
    return max(age, 0.0) if age < ttl else None
