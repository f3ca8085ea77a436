"""One job's page: its call, status, attempts, progress, outcome, the lines it logged, its
flow's stages, the dead letter it is (if it is one) and its events still in the stream
(queue/job_events.py)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import redis

from rqconc import errors
from rqconc.connection.clients import translated_errors
from rqconc.queue.dead_letters import DeadLetters
from rqconc.queue.job import Job
from rqconc.queue.job_events import scan_job_events
from rqconc.store.keys import KeySpace

FLOW_STAGES_SHOWN = 50


def _seconds(value: Optional[str]) -> Optional[float]:
    return int(value) / 1000 if value else None


def _call(job: Job) -> Dict[str, Any]:
    """Arguments as stored: decoded JSON, or a note for a pickled call (never unpickled
    here: unpickling runs code chosen by whoever can write to Redis)."""
    if job.serializer != "json":
        return {"args": None, "kwargs": None, "pickled": True}
    try:
        return {"args": job.args, "kwargs": job.kwargs, "pickled": False}
    except ValueError:
        return {"args": None, "kwargs": None, "pickled": False, "unreadable": True}


def _outcome(job: Job, status: str) -> Dict[str, Any]:
    if status == "finished":
        if job.serializer != "json":
            return {"result": None, "result_pickled": True}
        try:
            return {"result": job.return_value}
        except ValueError:
            return {"result": None, "result_unreadable": True}
    failure = job.exc_info
    if failure is None:
        return {}
    return {"error": {"type": failure[0], "message": failure[1], "traceback": failure[2]}}


def _progress(job: Job) -> Optional[Dict[str, Any]]:
    """`job.progress` (fraction, message) where the installed rqconc keeps progress."""
    progress = getattr(job, "progress", None)
    if not progress:
        return None
    fraction, message = progress
    return {"fraction": fraction, "message": message}


def _flow(job: Job) -> List[Dict[str, Any]]:
    if not (job.flow_id or job.next_id):
        return []
    stages = []
    for stage in job.flow()[:FLOW_STAGES_SHOWN]:
        stages.append({"id": stage.id, "function": stage.func_name, "status": str(stage.status)})
    return stages


def _dead_letter(client: redis.Redis, keys: KeySpace, job: Job) -> Optional[str]:
    """The queue whose dead letters hold this job, if they do."""
    queue = job.queue_name or "default"
    return queue if job.id in DeadLetters(client, keys, queue) else None


def _events(client: redis.Redis, keys: KeySpace, job: Job) -> Dict[str, Any]:
    stored = {name: job.field(name) for name in ("status", "created_at", "enqueued_at", "ended_at")}
    return scan_job_events(client, keys, job.id, stored).as_page()


def job_page(client: redis.Redis, namespace: str, job_id: str) -> Optional[Dict[str, Any]]:
    """Everything the job page shows, or None when there is no such job (any more)."""
    keys = KeySpace(namespace)
    try:
        with translated_errors(client):
            job = Job.fetch(job_id, client, namespace)
            status = str(job.status)
            page: Dict[str, Any] = {
                "id": job.id,
                "function": job.func_name,
                "queue": job.queue_name,
                "status": status,
                "priority": job.priority,
                "attempts": job.attempts,
                "description": job.description,
                "worker": job.worker_name,
                "meta": job.meta,
                "progress": _progress(job),
                "logs": job.logs(),
                "flow": _flow(job),
                "flow_id": job.flow_id,
                "dead_letter_of": _dead_letter(client, keys, job),
                **_events(client, keys, job),
                **{name: _seconds(job.field(name)) for name in _TIMES},
                **_call(job),
                **_outcome(job, status),
            }
    except errors.NoSuchJob:
        return None
    return page


_TIMES = ("created_at", "enqueued_at", "started_at", "ended_at")
