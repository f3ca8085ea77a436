"""Combined takes: the idle slots of one child share a take step instead of each sending
its own (`--slots`, slot_host.py).

The first slot to ask becomes the *leader*: it takes for itself and for every slot that
asked meanwhile, in one `WorkSource.take_many` step, and hands each slot what was leased
under that slot's own claim. Slots that ask while a take is under way wait for it to end;
the first of them then leads the next one. So at most one take per child is on its way to
the source at a time, and a burst of jobs fills every idle slot in one round trip.
"""

from __future__ import annotations

import threading
from typing import Dict, List, Optional, Sequence

from rqconc.engine.source import NextClaim, WorkItem, WorkSource


class _Request:
    __slots__ = ("claim", "item", "lead", "answered")

    def __init__(self, claim: str) -> None:
        self.claim = claim
        self.item: Optional[WorkItem] = None
        self.lead = False
        self.answered = threading.Event()


class CombinedTakes(WorkSource):
    """The child's source as its slot threads see it: takes are combined (see the module's
    doc); every other call goes to `source` itself."""

    def __init__(self, source: WorkSource, limit: int) -> None:
        self.source = source
        self.limit = limit
        self._lock = threading.Lock()
        self._waiting: List[_Request] = []
        self._leading = False

    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        request = _Request(claim)
        with self._lock:
            self._waiting.append(request)
            # A leader, if any, answers this request or hands the lead to it.
            request.lead = not self._leading
            self._leading = True
        if not request.lead:
            request.answered.wait()
            if not request.lead:
                return request.item
        return self._lead(request, timeout)

    def _lead(self, request: _Request, timeout: float) -> Optional[WorkItem]:
        # The leader is always the first waiting request: it takes for the first `limit`.
        with self._lock:
            batch = self._waiting[: self.limit]
            del self._waiting[: self.limit]
        items: Sequence[WorkItem] = ()
        try:
            if len(batch) == 1:
                item = self.source.take(request.claim, timeout)
                items = [item] if item is not None else []
            else:
                items = self.source.take_many([r.claim for r in batch], timeout)
        finally:
            # Even when the take raised: no slot may wait for an answer that never comes.
            by_claim: Dict[str, WorkItem] = {item.claim: item for item in items}
            with self._lock:
                following = self._waiting[0] if self._waiting else None
                if following is not None:
                    following.lead = True
                else:
                    self._leading = False
            for other in batch:
                other.item = by_claim.get(other.claim)
                if other is not request:
                    other.answered.set()
            if following is not None:
                following.answered.set()
        return request.item

    def take_many(self, claims: Sequence[str], timeout: float) -> List[WorkItem]:
        return list(self.source.take_many(claims, timeout))

    def perform(self, item: WorkItem, next_claim: Optional[NextClaim] = None) -> Optional[WorkItem]:
        return self.source.perform(item, next_claim)

    def give_back(self, item: WorkItem) -> None:
        self.source.give_back(item)

    def child_started(self, child_index: int) -> None:
        self.source.child_started(child_index)

    def child_stopping(self) -> Sequence[str]:
        return self.source.child_stopping()
