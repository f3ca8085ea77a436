"""What an eager queue's `enqueue_group` returns: `Group`'s interface (queue/workflow/groups.py)
over jobs that have all ended."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from rqconc import errors
from rqconc.queue.eager.job import EagerJob
from rqconc.store.status import JobStatus


class EagerGroup:
    """A group run inline: `id`, `jobs` (in the order given), `chord` (the callback's job,
    None without `.then(...)` or when a job of the group did not finish)."""

    def __init__(self, group_id: str, jobs: List[EagerJob], chord: Optional[EagerJob]) -> None:
        self.id = group_id
        self.jobs = jobs
        self.chord = chord

    def __repr__(self) -> str:
        return f"EagerGroup({self.id!r}, {len(self.jobs)} jobs)"

    def __len__(self) -> int:
        return len(self.jobs)

    def status(self) -> Dict[str, int]:
        """How many of its jobs are in each status (every status, zeros included)."""
        counts = {status.value: 0 for status in JobStatus}
        for job in self.jobs:
            counts[job.status.value] += 1
        return counts

    def get(self, timeout: Optional[float] = None) -> List[Any]:
        """The results in order, or the `JobFailed` of the first job (in order) that did
        not finish. Never blocks: every job has ended."""
        for job in self.jobs:
            if job.status is not JobStatus.FINISHED:
                job.get()  # raises its JobFailed
                raise errors.JobFailed(job.id, "", f"job {job.id} did not finish", "")
        return [job.return_value for job in self.jobs]


__all__ = ["EagerGroup"]
