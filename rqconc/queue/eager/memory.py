"""What an eager process keeps in place of Redis (docs/testing.md): its jobs by id, the job
holding each `unique_key`, each queue's limit settings (pause among them), the jobs a
paused queue holds and the jobs waiting for a parent that has not ended. Process-wide, as
Redis is for every `Queue` of a namespace, and bounded: a long test session must not grow
without end (the oldest jobs are forgotten, as Redis forgets jobs whose result_ttl passed).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Tuple

from rqconc.queue.eager.job import EagerJob
from rqconc.store.status import JobStatus

MAX_JOBS = 100_000
ENDED = (JobStatus.FINISHED.value, JobStatus.FAILED.value, JobStatus.CANCELED.value)
Perform = Callable[[EagerJob], None]  # the runner of the job's queue

_JOBS: OrderedDict[Tuple[str, str], EagerJob] = OrderedDict()
_UNIQUE: Dict[Tuple[str, str], EagerJob] = {}  # (namespace, unique_key) -> its holder
_SETTINGS: Dict[Tuple[str, str], Dict[str, str]] = {}  # (namespace, queue) -> settings
_HELD: Dict[Tuple[str, str], List[Tuple[Perform, EagerJob]]] = {}  # by a paused queue
_WAITING: List[Tuple[Perform, EagerJob]] = []  # deferred: a parent has not ended


def forget_jobs() -> None:
    """Forget every eager job and queue setting of this process: job ids and unique keys
    are free again, no queue is paused (a test fixture's teardown)."""
    for kept in (_JOBS, _UNIQUE, _SETTINGS, _HELD):
        kept.clear()
    _WAITING.clear()


def find_job(job_id: str, namespace: str = "rqconc") -> Optional[EagerJob]:
    return _JOBS.get((namespace, job_id))


def remember(job: EagerJob) -> None:
    _JOBS[(job.namespace, job.id)] = job
    while len(_JOBS) > MAX_JOBS:
        _JOBS.popitem(last=False)


def has_ended(job: Optional[EagerJob]) -> bool:
    return job is not None and job._fields.get("status") in ENDED


def unique_holder(namespace: str, key: str, now: int) -> Optional[EagerJob]:
    """The job that holds `key`, as enqueue_unique.lua finds it: one that has not ended, or
    one that ended less than its `unique_for` ago."""
    job = _UNIQUE.get((namespace, key))
    if job is None or not has_ended(job):
        return job
    keep = int(job._fields.get("unique_for", "0"))
    return job if int(job._fields.get("ended_at", "0")) + keep > now else None


def hold_unique(job: EagerJob, key: str) -> None:
    _UNIQUE[(job.namespace, key)] = job


def settings(namespace: str, queue: str) -> Dict[str, str]:
    """The queue's settings as the settings hash of a real queue holds them ("" or absent:
    no such setting); changed in place."""
    return _SETTINGS.setdefault((namespace, queue), {})


def is_paused(namespace: str, queue: str) -> bool:
    return _SETTINGS.get((namespace, queue), {}).get("paused") == "1"


def hold(perform: Perform, job: EagerJob) -> None:
    """Keep a job of a paused queue until `resume`, as a real queue keeps it waiting."""
    job._fields["status"] = JobStatus.QUEUED.value
    _HELD.setdefault((job.namespace, job.queue_name or "default"), []).append((perform, job))


def release_held(namespace: str, queue: str) -> None:
    """Run the jobs the queue held while it was paused, in the order they came."""
    for perform, job in _HELD.pop((namespace, queue), []):
        perform(job)


def wait_for_parents(perform: Perform, job: EagerJob) -> None:
    job._fields["status"] = JobStatus.DEFERRED.value
    _WAITING.append((perform, job))


def _settled(parent: Optional[EagerJob]) -> bool:
    return parent is None or has_ended(parent)  # forgotten: it ended long ago


def release_waiting() -> None:
    """Run the deferred jobs whose parents have all ended (called after each job ends)."""
    ready = [
        (perform, job)
        for perform, job in _WAITING
        if all(_settled(find_job(parent, job.namespace)) for parent in job.depends_on)
    ]
    for entry in ready:
        _WAITING.remove(entry)
    for perform, job in ready:
        perform(job)


__all__: List[Any] = ["find_job", "forget_jobs"]
