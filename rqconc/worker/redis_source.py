"""`RedisSource`: the WorkSource that takes jobs from Redis queues.

It holds the worker's settings and hands each call to the module that owns the concern:
- `taking.py`: the child side (take, perform, give back, orphaned claims);
- `outcomes.py`: recording finished and failed jobs, the retry decision, "until recorded";
- `duties.py`: the supervisor side (renewal, heartbeat and registry, recovery behind the
  maintenance gate, cron trigger, suspend, cancel, interrupted / lost / timed-out jobs);
- `connections.py`: the clients (the supervisor's pooled one, each child's direct one);
- `runner.py`: running one job's function.

Every step about a job presents the claim of its take (the fencing token), so a worker that
lost its lease can no longer record anything about that job.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import List, Optional, Sequence, Tuple, Union

import redis

from rqconc.connection.replicas import ReplicaWait
from rqconc.engine.source import NativeWork, NextClaim, SupervisorInfo, WorkItem, WorkSource
from rqconc.queue.job_logs import keep_job_records
from rqconc.queue.workflow.callbacks import (
    CALLBACK_TIMEOUT,
    WEBHOOK_TIMEOUT,
    set_webhook_timeout,
)
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import prepare as prepare_scripts
from rqconc.store.steps import JOB_STEPS
from rqconc.worker.cancels import Cancels
from rqconc.worker.connections import Connections, url_of
from rqconc.worker.end_hooks import EndHooks
from rqconc.worker.ended_children import EndedChildren
from rqconc.worker.event_retention import EventRetention
from rqconc.worker.guard import Guard
from rqconc.worker.hooks import Hooks, HookSpec
from rqconc.worker.leases import Leases
from rqconc.worker.listened import Listened
from rqconc.worker.native import RedisNativeWork
from rqconc.worker.presence import Presence
from rqconc.worker.recording import Recorder
from rqconc.worker.refusals import Refusals
from rqconc.worker.registry import DEFAULT_TTL
from rqconc.worker.runner import JobRunner
from rqconc.worker.scheduler import release_lease, run_scheduler
from rqconc.worker.taking import MAX_BLOCK, STRATEGIES, Taker

log = logging.getLogger("rqconc.worker")

__all__ = ["STRATEGIES", "RedisSource", "url_of"]


class RedisSource(WorkSource):
    """Takes jobs from `queues` in a Redis namespace (see docs/architecture.md); `["*"]`
    takes from every queue of the namespace, including those that appear later. Picklable:
    process backends hand each child a copy, which opens its own connections."""

    def __init__(
        self,
        url: Union[str, redis.Redis, None] = None,
        queues: Sequence[str] = ("default",),
        strategy: str = "ordered",
        allow: Sequence[str] = (),
        lease_seconds: float = 15,
        max_lost: int = 3,
        namespace: str = "rqconc",
        name: Optional[str] = None,
        registry_ttl: float = DEFAULT_TTL,
        maintenance_interval: float = 1.0,
        allow_pickle: bool = False,
        cli: bool = False,
        take_wait: float = MAX_BLOCK,
        webhook_timeout: float = WEBHOOK_TIMEOUT,
        callback_timeout: float = CALLBACK_TIMEOUT,
        wait: Optional[ReplicaWait] = None,
        hooks: Union[Hooks, Sequence[HookSpec]] = (),
        events: Optional[EventRetention] = None,
        burst: bool = False,
    ) -> None:
        self.keys = KeySpace(namespace)
        self.listened = Listened(queues, self.keys)  # the names, or "*": every queue
        self.name = name or f"{socket.gethostname()}.{os.getpid()}"
        self.connections = Connections(url, self.keys, wait)
        self.runner = JobRunner(self.connections, allow, allow_pickle, cli)
        self.recorder = Recorder(self.connections, self.name, callback_timeout)
        self.taker = Taker(self.connections, self.runner, self.recorder, self.listened,
            strategy, lease_seconds, take_wait, Refusals(count_repeats=burst))  # fmt: skip
        self.taker.hooks = self.hooks = hooks if isinstance(hooks, Hooks) else Hooks(hooks)
        self.webhook_timeout = webhook_timeout
        # The supervisor's side: each concern an object of its own, all through one guard.
        guard = self.guard = Guard(self.connections)
        ends = EndHooks(self.hooks, self.connections)  # the job hooks of the ends it records
        self.leases = Leases(self.connections, guard, self.name,
            lease_seconds, max_lost, maintenance_interval, ends, events)  # fmt: skip
        self.presence = Presence(self.connections, guard, self.listened, registry_ttl)
        self.cancels = Cancels(self.connections, guard, self.name, ends)
        self.ended = EndedChildren(self.connections, guard, self.recorder, lease_seconds, ends)

    @property
    def queues(self) -> List[str]:
        """The queue names it was given (["*"]: every queue of the namespace)."""
        return self.listened.given

    @property
    def lease_seconds(self) -> float:
        return self.leases.lease_seconds

    @lease_seconds.setter
    def lease_seconds(self, seconds: float) -> None:
        self.leases.lease_seconds = self.ended.lease_seconds = seconds
        self.taker.lease_ms = int(seconds * 1000)

    @property
    def url(self) -> Optional[str]:
        return self.connections.url

    @property
    def client(self) -> redis.Redis:
        return self.connections.client

    # ---- child side ----
    def child_started(self, child_index: int) -> None:
        # Not connected in this process: forked or unpickled, with nothing of the parent's.
        set_webhook_timeout(self.webhook_timeout)  # the webhooks this child delivers
        keep_job_records()  # the `rqconc.job` logger's records go with their job (SPEC 17)
        self.taker.child_started(forked=not self.connections.connected)
        self.connections.child_started()

    def child_alone(self) -> None:
        self.recorder.completions.alone = True  # nothing to combine with (completions.py)

    def child_stopping(self) -> List[str]:
        held = self.taker.child_stopping()
        self.connections.child_stopping()
        return held

    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        return self.taker.take(claim, timeout)

    def take_many(self, claims: Sequence[str], timeout: float) -> List[WorkItem]:
        return self.taker.take_many(claims, timeout)

    def perform(self, item: WorkItem, chain: Optional[NextClaim] = None) -> Optional[WorkItem]:
        return self.taker.perform(item, chain)

    def give_back(self, item: WorkItem) -> None:
        self.taker.give_back(item)

    def native_work(self) -> Optional[NativeWork]:
        """The asyncio backend's slots as tasks of its loop (worker/native.py)."""
        return RedisNativeWork(self.taker)

    # ---- supervisor side ----
    def supervisor_started(self, info: SupervisorInfo) -> None:
        prepare_scripts(JOB_STEPS)  # before the children: a forked one inherits them built
        # What this worker serves, said once: the queues, the Redis (no password) and the
        # allow-list, the first things to check when jobs wait or fail as not allowed.
        log.info(
            "worker %s serves queues %s of namespace %s on %s; allowed modules: %s",
            self.name,
            ", ".join(self.queues),
            self.keys.namespace,
            self.connections.describe(),
            self.runner.allowed_text(),
        )
        self.presence.started(info)

    def supervisor_stopped(self, info: SupervisorInfo) -> None:
        self.ended.flush_before_exit()
        self.presence.stopped(info)
        client, keys = self.connections.client, self.keys  # a live leader, or none, in cron list
        self.guard.run("releasing the cron lease", lambda: release_lease(client, keys, self.name))

    def stop_waiting(self) -> None:
        self.ended.stop_waiting()

    def renew(self, claims: Sequence[str]) -> None:
        self.leases.renew(claims)

    def renew_interval(self) -> float:
        return self.lease_seconds / 3

    def is_suspended(self) -> bool:
        return self.cancels.is_suspended()

    def tick(self, info: SupervisorInfo) -> None:
        self.ended.retry()
        self.presence.heartbeat(info)
        self.leases.recover_when_due()
        client, keys = self.connections.client, self.keys
        self.guard.run("running the cron scheduler", lambda: run_scheduler(client, keys, self.name))

    def maintain(self) -> Tuple[int, int]:
        """Recover expired leases now (if the maintenance gate is open): (requeued, dead)."""
        return self.leases.maintain()

    def is_drained(self) -> bool:
        """No job waits in the listened queues and none of their scheduled jobs is due."""
        client = self.connections.client
        drained = self.guard.run(
            "checking whether the queues are empty", lambda: self.listened.drained(client)
        )
        return bool(drained)

    def interrupted(self, claims: Sequence[str]) -> None:
        self.ended.interrupted(claims)

    def lost(self, claim: str, reason: str) -> None:
        self.ended.lost(claim, reason)

    def timed_out(self, claim: str, seconds: float) -> None:
        self.ended.timed_out(claim, seconds)

    def stop_requested(self, claims: Sequence[str]) -> Sequence[str]:
        return self.cancels.stop_requested(claims)

    def canceled(self, claim: str) -> None:
        self.cancels.canceled(claim)
