"""`NamespacesSource`: one worker serving several namespaces (`--namespace a,b`).

A namespace is the unit of placement: all its keys share one hash tag, so on Redis Cluster
it is one slot on one master, and every atomic step stays inside it. This source is a
round-robin over one `RedisSource` per namespace, and adds nothing atomic of its own:

- child side (`Rotation`, rotation.py): a child takes from each namespace in turn, starting
  one further along after each take, so a busy namespace never starves another. A
  completion may take the child's next job of the same namespace in the same step (the
  round trip it saves is most of a no-op job's cost), at most CHAIN_LIMIT jobs in a row;
  then the turn moves on. A child that found no work anywhere blocks on its *home*
  namespace (its index modulo the number of namespaces): with at least one child per
  namespace, a job is seen at once wherever it is enqueued; with fewer, within one take
  wait.
- supervisor side: leases, recovery, the cron scheduler, the registry, suspend and cancel
  are each namespace's own source's. A claim is unique to its take, so the supervisor's
  calls about claims go to every namespace and only the one holding the claim acts
  (renewals, the revocation of a cold shutdown, failing a lost job, a cancel).
- suspend is per namespace: `rqconc suspend --namespace a` stops takes from `a` only; the
  engine pauses the whole worker only when every namespace is suspended.
- the worker's log lines name the namespace they are about (`namespace=a`); at exit, the
  namespaces wait for an absent Redis at once, so an outage costs one lease, not one each.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Callable, List, Optional, Sequence, Set, Tuple, TypeVar, Union

import redis

from rqconc.connection.backoff import REDIS_DOWN
from rqconc.engine.source import NextClaim, SupervisorInfo, WorkItem, WorkSource
from rqconc.store.keys import split_namespaces
from rqconc.worker.logs import name_namespaces_in_logs, serving
from rqconc.worker.redis_source import RedisSource
from rqconc.worker.rotation import Rotation

T = TypeVar("T")


def source_for(
    namespace: Union[str, Sequence[str]], build: Callable[[str], RedisSource]
) -> WorkSource:
    """The source of a worker serving `namespace` (one name, a comma list or a list): the
    namespace's own RedisSource, or a NamespacesSource over one per namespace."""
    names = split_namespaces(namespace)
    if len(names) == 1:
        return build(names[0])
    return NamespacesSource([build(name) for name in names])


def each(sources: Sequence[RedisSource], call: Callable[[int, RedisSource], T]) -> List[T]:
    """`call(index, source)` for each namespace in turn, its log lines naming it."""
    results = []
    for index, source in enumerate(sources):
        with serving(source.keys.namespace):
            results.append(call(index, source))
    return results


def _running_here(source: RedisSource, job_ids: Sequence[str]) -> Sequence[str]:
    """Of the jobs the worker runs, those of `source`'s namespace (its registry entry lists
    them): the ids leased there. While Redis does not answer, all of them."""
    if not job_ids:
        return job_ids
    try:
        leased = source.client.zmscore(source.keys.active, list(job_ids))
    except (*REDIS_DOWN, redis.exceptions.ResponseError):
        return job_ids  # the heartbeat that follows meets the same error, and says so
    return [job_id for job_id, deadline in zip(job_ids, leased) if deadline is not None]


def _stop(source: RedisSource, info: SupervisorInfo) -> None:
    with serving(source.keys.namespace):
        source.supervisor_stopped(info)


class NamespacesSource(WorkSource):
    """Jobs from the same queues in each of several namespaces (one `RedisSource` each)."""

    def __init__(self, sources: Sequence[RedisSource]) -> None:
        names = [s.keys.namespace for s in sources]
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValueError(f"NamespacesSource needs distinct namespaces, not {names}")
        self.sources = list(sources)
        self.namespaces = names
        self.name = sources[0].name
        self.rotation = Rotation(self.sources)  # child side: pickled to process children
        self._suspended: Set[int] = set()  # supervisor side: the namespaces suspended now
        name_namespaces_in_logs()

    @property
    def lease_seconds(self) -> float:
        return self.sources[0].lease_seconds

    @lease_seconds.setter
    def lease_seconds(self, seconds: float) -> None:
        for source in self.sources:
            source.lease_seconds = seconds

    # ---- child side: the rotation over the namespaces (rotation.py) ----
    def child_started(self, child_index: int) -> None:
        self.rotation.child_started(child_index)
        for source in self.sources:
            source.child_started(child_index)

    def child_alone(self) -> None:
        for source in self.sources:
            source.child_alone()

    def child_stopping(self) -> Sequence[str]:
        return [claim for source in self.sources for claim in source.child_stopping()]

    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        return self.rotation.take(claim, timeout)

    def perform(self, item: WorkItem, next_claim: Optional[NextClaim] = None) -> Optional[WorkItem]:
        return self.rotation.perform(item, next_claim)

    def give_back(self, item: WorkItem) -> None:
        self.rotation.give_back(item)

    # ---- supervisor side: each namespace's own duties ----
    def _info(self, index: int, info: SupervisorInfo) -> SupervisorInfo:
        """The supervisor as namespace `index`'s registry shows it (suspended there?)."""
        return dataclasses.replace(info, suspended=index in self._suspended)

    def supervisor_started(self, info: SupervisorInfo) -> None:
        each(self.sources, lambda i, source: source.supervisor_started(self._info(i, info)))

    def supervisor_stopped(self, info: SupervisorInfo) -> None:
        # At once, each in a thread: each namespace may wait up to one lease for Redis to
        # record the steps of ended children, and one outage must cost one lease, not one
        # per namespace.
        stopping = [
            threading.Thread(target=_stop, args=(source, self._info(i, info)), daemon=True)
            for i, source in enumerate(self.sources)
        ]
        for thread in stopping:
            thread.start()
        for thread in stopping:
            thread.join()

    def stop_waiting(self) -> None:
        for source in self.sources:  # from a signal handler: flags only, nothing logged
            source.stop_waiting()

    def renew(self, claims: Sequence[str]) -> None:
        each(self.sources, lambda _, source: source.renew(claims))

    def renew_interval(self) -> float:
        return min(source.renew_interval() for source in self.sources)

    def tick(self, info: SupervisorInfo) -> None:
        def tick_one(index: int, source: RedisSource) -> None:
            shown = self._info(index, info)
            running = _running_here(source, shown.current_items)
            source.tick(dataclasses.replace(shown, current_items=running))

        each(self.sources, tick_one)

    def maintain(self) -> Tuple[int, int]:
        """Recover expired leases in each namespace: (requeued, dead-lettered) in all."""
        found = each(self.sources, lambda _, source: source.maintain())
        return sum(r for r, _ in found), sum(d for _, d in found)

    def is_suspended(self) -> bool:
        found = each(self.sources, lambda _, source: source.is_suspended())
        self._suspended = {i for i, suspended in enumerate(found) if suspended}
        return len(self._suspended) == len(self.sources)

    def is_drained(self) -> bool:
        return all(each(self.sources, lambda _, source: source.is_drained()))

    def interrupted(self, claims: Sequence[str]) -> None:
        # Every namespace revokes them: a take in flight may land in any of them.
        each(self.sources, lambda _, source: source.interrupted(claims))

    def lost(self, claim: str, reason: str) -> None:
        each(self.sources, lambda _, source: source.lost(claim, reason))

    def timed_out(self, claim: str, seconds: float) -> None:
        each(self.sources, lambda _, source: source.timed_out(claim, seconds))

    def stop_requested(self, claims: Sequence[str]) -> Sequence[str]:
        found = each(self.sources, lambda _, source: source.stop_requested(claims))
        wanted = {claim for claims_found in found for claim in claims_found}
        return [claim for claim in claims if claim in wanted]

    def canceled(self, claim: str) -> None:
        each(self.sources, lambda _, source: source.canceled(claim))
