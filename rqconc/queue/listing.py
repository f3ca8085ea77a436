"""The jobs of a queue by status, one page at a time (SPEC 17): what `rqconc jobs` and the
dashboard's queue page list.

Each status is one sorted set of the queue (keys.py), read by rank (ZRANGE / ZREVRANGE with
offsets: O(log N + page)), so a page costs the same with 1,000 or 1,000,000 jobs. Waiting
jobs come in run order; the others newest first (started by start time, scheduled by due
time, deferred by enqueue order, finished by expiry, failed by failure time). Canceled jobs
end in no set (a canceled job keeps only its hash): they are opened by id.

A filter by function name cannot use an index (none is kept, so enqueueing stays one step):
it reads the function of at most FILTER_WINDOW ids per page, from `offset` on, and says how
far it searched (`scanned`, `next_offset`), so the next page searches on from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

import redis

from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.queue.dead_letters import newest_letters
from rqconc.queue.job import Job
from rqconc.store.clock import redis_time_ms
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import text

STATUSES = ("queued", "started", "scheduled", "deferred", "finished", "failed")
PAGE = 50  # jobs per page unless told
MAX_LIMIT = 500  # most jobs one page may ask for
FILTER_WINDOW = 2000  # most ids a filtered page reads the function of


@dataclass
class JobListing:
    """One page of a queue's jobs of one status."""

    queue: str
    status: str
    offset: int
    limit: int
    total: int  # jobs of that status (not only those matching the filter)
    jobs: List[Job] = field(default_factory=list)
    func: Optional[str] = None
    scanned: int = 0  # with a filter: ids searched for this page
    next_offset: Optional[int] = None  # where the next page starts; None: this is the last


def check_status(status: str) -> str:
    if status == "canceled":
        raise ValueError(
            "canceled jobs are kept in no list (only their hash, until it expires): "
            "open one by its id"
        )
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    return status


def check_page(offset: int, limit: int) -> None:
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, not {offset}")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")


def list_jobs(
    connection: ConnectionLike,
    queue: str,
    status: str,
    offset: int = 0,
    limit: int = PAGE,
    func: Optional[str] = None,
    namespace: str = "rqconc",
) -> JobListing:
    """`limit` jobs of `queue` with `status` from `offset`; with `func`, only jobs whose
    function name contains it, searched in a window of FILTER_WINDOW ids from `offset`.
    ValueError for an unknown status or a bad page."""
    check_status(status)
    check_page(offset, limit)
    client, keys = connect(connection), KeySpace(namespace)
    listing = JobListing(queue, status, offset, limit, 0, func=func or None)
    with translated_errors(client):
        if listing.func is None:
            ids, listing.total = _ids(client, keys, listing, limit)
            end = offset + len(ids)
        else:
            window, listing.total = _ids(client, keys, listing, FILTER_WINDOW)
            ids, listing.scanned = _matching(client, keys, window, listing.func, limit)
            end = offset + listing.scanned
        listing.next_offset = end if end < listing.total else None
        listing.jobs = [j for j in Job.fetch_many(ids, client, namespace) if j is not None]
    return listing


def due_soonest(
    connection: ConnectionLike, queue: str, count: int = PAGE, namespace: str = "rqconc"
) -> Tuple[List[Tuple[str, float]], int]:
    """The `count` scheduled jobs of `queue` due soonest, as (id, due time in Unix seconds),
    and how many are scheduled (the dashboard's Scheduled page)."""
    client, key = connect(connection), KeySpace(namespace).scheduled(queue)
    with translated_errors(client):
        pipe = client.pipeline(transaction=False)
        pipe.zrange(key, 0, count - 1, withscores=True)
        pipe.zcard(key)
        due, total = pipe.execute()
    return [(text(job_id), score / 1000) for job_id, score in due], int(total)


def _ids(
    client: redis.Redis, keys: KeySpace, listing: JobListing, count: int
) -> Tuple[List[str], int]:
    """`count` ids of the listing's set from its offset, and the set's live size."""
    name, start, stop = listing.queue, listing.offset, listing.offset + count - 1
    if listing.status == "failed":  # expired letters left out (dead_letters.py)
        letters, totals = newest_letters(client, keys, [name], start, count)
        return [job_id for job_id, _ in letters], totals[name]
    key = {
        "queued": keys.queue,
        "started": keys.started,
        "scheduled": keys.scheduled,
        "deferred": keys.deferred,
        "finished": keys.finished,
    }[listing.status](name)
    pipe = client.pipeline(transaction=False)
    if listing.status == "queued":
        pipe.zrange(key, start, stop)
    else:
        pipe.zrevrange(key, start, stop)
    if listing.status == "finished":  # scored by expiry: the expired ones rank last
        pipe.zcount(key, f"({redis_time_ms(client, keys)}", "+inf")
    else:
        pipe.zcard(key)
    found, total = pipe.execute()
    ids = [text(i) for i in found]
    return ids[: max(0, int(total) - start)], int(total)


def _matching(
    client: redis.Redis, keys: KeySpace, window: List[str], func: str, limit: int
) -> Tuple[List[str], int]:
    """The first `limit` ids of `window` whose function contains `func`, and how many ids
    were searched to find them (one pipelined HGET per id)."""
    pipe = client.pipeline(transaction=False)
    for job_id in window:
        pipe.hget(keys.job(job_id), "func")
    names: List[Any] = pipe.execute() if window else []
    found: List[str] = []
    for searched, (job_id, name) in enumerate(zip(window, names), start=1):
        if name is not None and func in text(name):
            found.append(job_id)
            if len(found) == limit:
                return found, searched
    return found, len(window)


__all__ = ["JobListing", "STATUSES", "PAGE", "FILTER_WINDOW", "list_jobs", "check_status"]
