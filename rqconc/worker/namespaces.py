"""`NamespacesSource`: one worker serving several namespaces (`--namespace a,b`).

A namespace is the unit of placement: all its keys share one hash tag, so on Redis Cluster
it is one slot on one master, and every atomic step stays inside it. This source is a
round-robin over one `RedisSource` per namespace, and adds nothing atomic of its own:

- child side: a child takes from each namespace in turn, starting one further along after
  each take, so a busy namespace never starves another. A completion may take the child's
  next job of the same namespace in the same step (the round trip it saves is most of a
  no-op job's cost), at most CHAIN_LIMIT jobs in a row; then the turn moves on. A child
  that found no work anywhere blocks on its *home* namespace (its index modulo the number
  of namespaces): with at least one child per namespace, a job is seen at once wherever it
  is enqueued; with fewer, within one take wait.
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
import logging
import os
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
    TypeVar,
    Union,
)

import redis

from rqconc.connection.backoff import REDIS_DOWN
from rqconc.engine.source import NextClaim, SupervisorInfo, WorkItem, WorkSource
from rqconc.worker.redis_source import RedisSource

T = TypeVar("T")
# Jobs a child takes from one namespace in a row (by chained takes) before its turn moves.
CHAIN_LIMIT = 8
# How long a child trusts what it read of a namespace's suspend flag (s): the supervisor
# reads it about once a second, so a child's cached copy is never the slower of the two.
SUSPEND_REFRESH = 0.5


def split_namespaces(namespace: Any) -> List[str]:
    """`"a,b"`, `["a", "b"]` or `"a"` as a list of distinct names (order kept)."""
    names = namespace.split(",") if isinstance(namespace, str) else list(namespace)
    names = [n.strip() if isinstance(n, str) else n for n in names]
    if not names or any(not n for n in names):
        raise ValueError(f"invalid namespace {namespace!r}: give one name or a comma list")
    if len(set(names)) != len(names):
        raise ValueError(f"namespace {namespace!r} names one namespace twice")
    return names


def source_for(
    namespace: Union[str, Sequence[str]], build: Callable[[str], RedisSource]
) -> WorkSource:
    """The source of a worker serving `namespace` (one name, a comma list or a list): the
    namespace's own RedisSource, or a NamespacesSource over one per namespace."""
    names = split_namespaces(namespace)
    if len(names) == 1:
        return build(names[0])
    return NamespacesSource([build(name) for name in names])


# The namespace whose work the calling thread or greenlet does now, for the log lines of a
# worker serving several (a ContextVar: per thread, and per greenlet under gevent).
_SERVING: ContextVar[Optional[str]] = ContextVar("rqconc_namespace", default=None)


@contextmanager
def serving(namespace: str) -> Iterator[None]:
    token = _SERVING.set(namespace)
    try:
        yield
    finally:
        _SERVING.reset(token)


class NamespaceField(logging.Filter):
    """Adds `namespace` to the worker's log records written while serving one namespace of
    several (`job ... started ... namespace=b`): queue names and job ids repeat across them."""

    def filter(self, record: logging.LogRecord) -> bool:
        namespace = _SERVING.get()
        if namespace is not None and not hasattr(record, "namespace"):
            record.namespace = namespace
        return True


def name_namespaces_in_logs() -> None:
    """Install `NamespaceField` on the worker's logger (once per process)."""
    logger = logging.getLogger("rqconc.worker")
    if not any(isinstance(f, NamespaceField) for f in logger.filters):
        logger.addFilter(NamespaceField())


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


class _Turns:
    """One child's place in the rotation (per thread, greenlet or process)."""

    __slots__ = ("pid", "home", "next", "streak", "owners", "paused")

    def __init__(self, pid: int, home: int = 0) -> None:
        self.pid = pid
        self.home = home  # the namespace it blocks on while there is no work anywhere
        self.next = home  # the namespace the next take looks at first
        self.streak = 0  # jobs taken in a row from the current namespace
        self.owners: Dict[str, int] = {}  # claim -> namespace index, for perform/give_back
        self.paused: Dict[int, Tuple[float, bool]] = {}  # index -> (read at, suspended)

    def took(self, claim: str, index: int, count: int, item: WorkItem) -> WorkItem:
        """`item` was taken from namespace `index`: the next take starts at the next one."""
        self.owners[claim] = index
        self.next, self.streak = (index + 1) % count, 1
        return item


class NamespacesSource(WorkSource):
    """Jobs from the same queues in each of several namespaces (one `RedisSource` each)."""

    def __init__(self, sources: Sequence[RedisSource]) -> None:
        names = [s.keys.namespace for s in sources]
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValueError(f"NamespacesSource needs distinct namespaces, not {names}")
        self.sources = list(sources)
        self.namespaces = names
        self.name = sources[0].name
        self._local = threading.local()  # greenlet-local under gevent, as Connections'
        self._suspended: Set[int] = set()  # supervisor side: the namespaces suspended now
        name_namespaces_in_logs()

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        del state["_local"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
        name_namespaces_in_logs()  # a spawned child: a fresh interpreter

    def _turns(self) -> _Turns:
        turns: Optional[_Turns] = getattr(self._local, "turns", None)
        if turns is None or turns.pid != os.getpid():
            turns = self._local.turns = _Turns(os.getpid())
        return turns

    @property
    def lease_seconds(self) -> float:
        return self.sources[0].lease_seconds

    @lease_seconds.setter
    def lease_seconds(self, seconds: float) -> None:
        for source in self.sources:
            source.lease_seconds = seconds

    # ---- child side ----
    def child_started(self, child_index: int) -> None:
        home = child_index % len(self.sources)
        self._local.turns = _Turns(os.getpid(), home)
        for source in self.sources:
            source.child_started(child_index)

    def child_stopping(self) -> Sequence[str]:
        return [claim for source in self.sources for claim in source.child_stopping()]

    def _paused(self, turns: _Turns, index: int) -> bool:
        """Whether namespace `index` is suspended, as this child last read it."""
        read_at, paused = turns.paused.get(index, (float("-inf"), False))
        now = time.monotonic()
        if now - read_at < SUSPEND_REFRESH:
            return paused
        source = self.sources[index]
        try:
            client = source.connections.child().steps.client
            paused = bool(client.execute("EXISTS", source.keys.suspended))
        except REDIS_DOWN:
            pass  # keep the last answer: the take that follows meets the outage anyway
        turns.paused[index] = (now, paused)
        return paused

    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        turns = self._turns()
        count = len(self.sources)
        order = [(turns.next + k) % count for k in range(count)]
        order = [i for i in order if not self._paused(turns, i)]
        if not order:  # every namespace suspended: the supervisor pauses the children soon
            time.sleep(min(max(timeout, 0.0), 0.1))
            return None
        for index in order:  # a look that costs one round trip each, in turn
            with serving(self.namespaces[index]):
                item = self.sources[index].take(claim, 0.0)
            if item is not None:
                return turns.took(claim, index, count, item)
            if self.sources[index].taker.backing_off():
                # Redis is away (the claim may be leased under a lost reply: it is that
                # namespace's orphan now); one outage, one backoff, not one per namespace.
                return None
        # Nothing anywhere: block on the child's home namespace, so that with a child per
        # namespace each has one woken at once by its next job (the others are looked at
        # again after at most one take wait).
        home = turns.home if turns.home in order else order[0]
        with serving(self.namespaces[home]):
            item = self.sources[home].take(claim, timeout)
        if item is not None:
            return turns.took(claim, home, count, item)
        turns.next = (turns.next + 1) % count
        return None

    def perform(self, item: WorkItem, next_claim: Optional[NextClaim] = None) -> Optional[WorkItem]:
        turns = self._turns()
        index = turns.owners.pop(item.claim)
        chain = next_claim
        if turns.streak >= CHAIN_LIMIT or self._paused(turns, index):
            chain = None  # the turn moves on: the next take starts at another namespace
        with serving(self.namespaces[index]):
            following = self.sources[index].perform(item, chain)
        if following is not None:
            turns.owners[following.claim] = index
            turns.streak += 1
        return following

    def give_back(self, item: WorkItem) -> None:
        index = self._turns().owners.pop(item.claim)
        with serving(self.namespaces[index]):
            self.sources[index].give_back(item)

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
