"""A child's side of a worker of several namespaces (namespaces.py): the rotation over one
`RedisSource` per namespace. A child takes from each namespace in turn, starting one
further along after each take, so a busy namespace never starves another; a completion may
take the child's next job of the same namespace in the same step, at most CHAIN_LIMIT jobs
in a row; a child that found no work anywhere blocks on its *home* namespace. Each child
(thread, greenlet or process) keeps its own place in the rotation (`_Turns`), so the
`Rotation` itself is pickled to process children without it."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Dict, Optional, Sequence, Tuple

from rqconc.connection.backoff import REDIS_DOWN
from rqconc.engine.source import NextClaim, WorkItem
from rqconc.worker.logs import name_namespaces_in_logs, serving
from rqconc.worker.redis_source import RedisSource

# Jobs a child takes from one namespace in a row (by chained takes) before its turn moves.
CHAIN_LIMIT = 8
# How long a child trusts what it read of a namespace's suspend flag (s): the supervisor
# reads it about once a second, so a child's cached copy is never the slower of the two.
SUSPEND_REFRESH = 0.5


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


class Rotation:
    """Takes, performs and gives back jobs of several namespaces, in turn, for each child."""

    def __init__(self, sources: Sequence[RedisSource]) -> None:
        self.sources = list(sources)
        self.namespaces = [s.keys.namespace for s in sources]
        self._local = threading.local()  # greenlet-local under gevent, as Connections'

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        del state["_local"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
        name_namespaces_in_logs()  # a spawned child: a fresh interpreter

    def child_started(self, child_index: int) -> None:
        self._local.turns = _Turns(os.getpid(), child_index % len(self.sources))

    def _turns(self) -> _Turns:
        turns: Optional[_Turns] = getattr(self._local, "turns", None)
        if turns is None or turns.pid != os.getpid():
            turns = self._local.turns = _Turns(os.getpid())
        return turns

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
