"""`depends_on`: a job waits (status `deferred`) until every parent has finished.

Pass jobs or ids, or a `Dependency` to let the job run even when a parent fails for good
(`allow_failure=True`). Without it, a parent failing for good or being canceled cancels
the job, and its own dependents in turn (lua/include/dependents.lua).
"""

from __future__ import annotations

from typing import Any, Iterable, List, Tuple, Union

from rqconc.queue.placement import namespaces_of


class Dependency:
    """The parents of a job, and whether it may run after one of them failed for good."""

    def __init__(self, jobs: Union[Any, Iterable[Any]], allow_failure: bool = False) -> None:
        self.job_ids = _ids(jobs)
        # Of the jobs given (ids say none): a parent of another namespace is refused at
        # enqueue (rqconc/queue/placement.py).
        self.namespaces = namespaces_of(jobs if isinstance(jobs, (list, tuple, set)) else [jobs])
        if not self.job_ids:
            raise ValueError("Dependency needs at least one job")
        self.allow_failure = bool(allow_failure)

    def __repr__(self) -> str:
        return f"Dependency({self.job_ids!r}, allow_failure={self.allow_failure})"


def _ids(jobs: Any) -> List[str]:
    items = jobs if isinstance(jobs, (list, tuple, set)) else [jobs]
    ids = []
    for item in items:
        job_id = getattr(item, "id", item)  # a Job, or an id
        if not isinstance(job_id, str) or not job_id:
            raise ValueError(f"depends_on takes jobs or job ids, not {item!r}")
        ids.append(job_id)
    return ids


def parents_of(depends_on: Any) -> Tuple[List[str], bool]:
    """(parent ids, allow_failure) of a `depends_on=` option."""
    if isinstance(depends_on, Dependency):
        return depends_on.job_ids, depends_on.allow_failure
    return _ids(depends_on), False
