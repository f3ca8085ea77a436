"""Combined takes: the idle slots of one child share a take step instead of each sending
its own (`--slots`, slots/host.py; the asyncio backend).

The slots' takes go through a `combiner.Combiner`: the first slot to ask takes for itself
and for every slot that asked meanwhile, in one `WorkSource.take_many` step, and hands each
slot what was leased under that slot's own claim. So at most one take per child is on its
way to the source at a time, and a burst of jobs fills every idle slot in one round trip.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from rqconc.engine.slots.combiner import Combiner
from rqconc.engine.source import NextClaim, WorkItem, WorkSource


class _Interrupted(Exception):
    """The slot that took for this one was interrupted: this slot took nothing it knows of
    (a job leased under its claim meanwhile goes back with the child's claims)."""


class CombinedTakes(WorkSource):
    """The child's source as its slot threads see it: takes are combined (see the module's
    doc); every other call goes to `source` itself."""

    def __init__(self, source: WorkSource, limit: int) -> None:
        self.source = source
        self._takes: Combiner[Tuple[str, float], Optional[WorkItem]] = Combiner(
            self._take_batch, limit, _Interrupted
        )

    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        try:
            return self._takes.call((claim, timeout))
        except _Interrupted:
            return None

    def _take_batch(self, requests: Sequence[Tuple[str, float]]) -> List[Optional[WorkItem]]:
        # The leader's claim goes first and its wait stands for the batch. Race: after a
        # lost reply every slot of the batch takes again under the same claim, in a batch
        # any slot may lead, so the source must put back what a lost take leased under a
        # claim before whichever thread sends the next take under it (the Redis source:
        # worker/connections.Orphans); a source that kept that with the leader's thread
        # would lease a new job under the claim, then put that running job back.
        claim, timeout = requests[0]
        if len(requests) == 1:
            return [self.source.take(claim, timeout)]
        items = self.source.take_many([c for c, _ in requests], timeout)
        by_claim = {item.claim: item for item in items}
        return [by_claim.get(c) for c, _ in requests]

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
