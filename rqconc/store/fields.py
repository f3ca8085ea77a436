"""How the enqueue steps are told to store a batch of jobs: which step takes it, and
which jobs it marks lean (stored without any field of scripts.LEAN_SPOILERS, so take and
complete skip asking for those fields)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from rqconc.store.scripts import LEAN_SPOILERS


def one_plain_job(
    jobs: Sequence[Tuple[str, Dict[str, Any]]],
    due_ms: Optional[int],
    common: Dict[str, Any],
    fresh_ids: bool,
) -> bool:
    """Whether the batch is one job under a fresh random id, waiting now, depending on
    nothing, with the basic events: what enqueue_one.lua stores (enqueue.lua the rest)."""
    return (
        fresh_ids
        and due_ms is None
        and len(jobs) == 1
        and "depends_on" not in common
        and "depends_on" not in jobs[0][1]
        and "event_detail" not in common  # enqueue_one's event is the basic one
    )


def lean_marks(
    common: Dict[str, Any], jobs: Sequence[Tuple[str, Dict[str, Any]]]
) -> Tuple[Dict[str, Any], List[bool]]:
    """`lean` ("1") for every job stored without any of scripts.LEAN_SPOILERS: in the common
    fields when every job of the batch is lean (one pair for all), else in each lean job's
    own fields (the returned flags say which)."""
    if not LEAN_SPOILERS.isdisjoint(common):
        return common, [False] * len(jobs)
    leans = [LEAN_SPOILERS.isdisjoint(fields) for _, fields in jobs]
    if all(leans):
        return {**common, "lean": "1"}, [False] * len(jobs)
    return common, leans
