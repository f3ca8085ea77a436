"""The Redis reads behind each page, each O(page): counts by ZCARD/HLEN-style sizes, lists
by ZRANGE with limits, jobs by one pipelined HGETALL per shown row. Nothing here walks a
whole queue, so a page costs the same with 1,000 or 1,000,000 jobs queued.

Every function returns JSON-ready data (times as Unix seconds); the page shows it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import redis

from rqconc.connection.clients import translated_errors
from rqconc.queue.control import is_suspended
from rqconc.queue.counts import queue_counts, queue_names
from rqconc.queue.dead_letters import newest_letters
from rqconc.queue.events import EventStream
from rqconc.queue.job import Job
from rqconc.queue.limits.settings import Limits
from rqconc.queue.listing import due_soonest, list_jobs
from rqconc.queue.schedule import cron
from rqconc.store.clock import redis_time
from rqconc.store.keys import KeySpace
from rqconc.worker.registry import list_workers, live_count

PAGE = 50  # rows per list page
FEED_BATCH = 200  # events per live-feed answer at most


def overview(client: redis.Redis, namespace: str) -> Dict[str, Any]:
    """Every queue's counts by status (and `paused`, `limits` where it has them, as in
    `rqconc info --json`), whether workers are suspended, how many are live."""
    keys = KeySpace(namespace)
    with translated_errors(client):
        queues = queue_counts(client, None, namespace)
        settings = Limits.read_many(client, keys, [q["name"] for q in queues])
        for row in queues:
            row.update(settings[row["name"]].report())
        return {
            "namespace": namespace,
            "queues": queues,
            "suspended": is_suspended(client, namespace),
            "workers": live_count(client, namespace),
        }


def workers(client: redis.Redis, namespace: str) -> Dict[str, Any]:
    """The live workers, each with its heartbeat age and one row per child: the busy ones
    with their job, then the idle ones (the registry lists running jobs, not their slots)."""
    with translated_errors(client):
        now = redis_time(client, KeySpace(namespace))
        found = list_workers(client, namespace)
    for worker in found:
        worker["heartbeat_age"] = round(max(0.0, now - worker["last_heartbeat"]), 1)
        jobs = [str(j) for j in worker["current_jobs"]]
        idle = max(0, worker["busy"] + worker["idle"] - len(jobs))
        worker["children"] = [{"state": "busy", "job_id": j} for j in jobs] + [
            {"state": "idle", "job_id": None} for _ in range(idle)
        ]
    return {"workers": found, "now": now}


def _row(job: Job) -> Dict[str, Any]:
    fields = {name: job.field(name) for name in ("status", "exc_type", "exc_message")}
    return {
        "id": job.id,
        "function": job.func_name,
        "queue": job.queue_name,
        "description": job.description,
        "attempts": int(job.field("attempts") or 0),
        **fields,
    }


def _jobs(client: redis.Redis, namespace: str, ids: List[str]) -> List[Job]:
    return [job for job in Job.fetch_many(ids, client, namespace) if job is not None]


def failed_page(
    client: redis.Redis, namespace: str, queue: Optional[str], offset: int = 0
) -> Dict[str, Any]:
    """One page of dead letters, latest failure first, with their tracebacks: of `queue`, or
    of every queue together when it is None (read by dead_letters.newest_letters: the cost
    grows with the page's depth and the number of queues, never with the number of
    letters; expired letters left out and not counted). `queues`: the live letters of each
    queue that has some."""
    keys = KeySpace(namespace)
    with translated_errors(client):
        names = [queue] if queue else queue_names(client, namespace)
        shown, totals = newest_letters(client, keys, names, offset, PAGE)
        jobs = _jobs(client, namespace, [job_id for job_id, _ in shown])
    of = dict(shown)
    rows = [
        dict(_row(job), queue=of[job.id], traceback=job.field("traceback") or "") for job in jobs
    ]
    found = {name: n for name, n in totals.items() if n}
    return {
        "queue": queue,
        "offset": offset,
        "total": sum(totals.values()),
        "queues": found,
        "jobs": rows,
    }


def scheduled_page(client: redis.Redis, namespace: str, queue: str) -> Dict[str, Any]:
    """The next PAGE scheduled jobs of a queue (due soonest first) with their due times."""
    due, total = due_soonest(client, queue, PAGE, namespace)
    with translated_errors(client):
        jobs = _jobs(client, namespace, [job_id for job_id, _ in due])
    when = dict(due)
    rows = [dict(_row(job), due=when.get(job.id)) for job in jobs]
    return {"queue": queue, "total": int(total), "jobs": rows}


def jobs_page(
    client: redis.Redis,
    namespace: str,
    queue: str,
    status: str,
    offset: int = 0,
    func: Optional[str] = None,
) -> Dict[str, Any]:
    """One page of the jobs of `queue` with `status` (queue/listing.py: O(page) reads; a
    function filter searches a bounded window and says how far it went). ValueError for a
    status the store keeps no list of."""
    listing = list_jobs(client, queue, status, offset, PAGE, func, namespace)
    return {
        "queue": queue,
        "status": status,
        "func": listing.func,
        "offset": offset,
        "total": listing.total,
        "scanned": listing.scanned,
        "next_offset": listing.next_offset,
        "jobs": [_row(job) for job in listing.jobs],
    }


def crons(client: redis.Redis, namespace: str) -> List[Dict[str, Any]]:
    """Every cron entry with its next runs (a handful per namespace, never per job)."""
    with translated_errors(client):
        found = cron.entries(client, KeySpace(namespace))
    return [entry.as_dict() for entry in found]


def events(client: redis.Redis, namespace: str, after: Optional[str]) -> Dict[str, Any]:
    """The live feed: events after stream id `after` (oldest first), or the latest page
    when `after` is empty; `last` is the id to ask after next time."""
    stream = EventStream(client, namespace)
    if not after:
        found = stream.latest(PAGE)
    else:
        found = stream.after(after, FEED_BATCH)
    # The id to read after: an entry's (a joined entry's second event has the entry's + ".1").
    last = found[-1]["id"].partition(".")[0] if found else (after or "0-0")
    return {"events": found, "last": last}
