"""One job's events for its page, found in the namespace's event stream by a bounded scan.

The stream holds up to --events-max entries (every job of the namespace together) and
its ids are Redis-clock milliseconds, so a job's events lie between its creation and its
end. The scan reads that span in pages, from the job's `created_at` (less a margin: the
enqueuing client's clock stamped it, and hosts' clocks may disagree) until the job's end (its
`ended_at`, on Redis' clock, once it has ended for good), the stream's end, or a page budget
(PAGES), whichever comes first. A busy namespace (issue 32: a
page read 1,000 entries from 60 s before the job and found none of its events once the
namespace passed ~17 events/s) costs more pages, never a missed event still in the stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import redis

from rqconc.queue.events import JOINED, Event, entry_events
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import text

CLOCK_MARGIN_MS = 60_000  # before created_at: hosts whose clocks disagree
END_MARGIN_MS = 1_000  # after ended_at: the ending step's event, stamped a little later
PAGE = 1_000  # entries per XRANGE
# At most 10,000 entries from the job's creation on, so a job's page stays under SPEC 13's
# 100 ms: for a job queued ahead of a million others, whose events fill the stream after
# it, 100,000 entries took 376 ms, 20,000 83 ms and 10,000 51 ms (bench/dashboard_latency.py).
# A job whose events lie further on in a busy namespace is shown `partial`.
PAGES = 10
ENDED = ("finished", "failed", "canceled")  # statuses after which a job has no more events
# The events that store a job: the first of a job whose history is all in the stream.
CREATED = ("queued", "scheduled", "deferred")
JOINED_JOB_ID = (JOINED + "job_id").encode()


@dataclass
class JobEvents:
    """The job's events found, oldest first; `trimmed`: its oldest ones are gone from the
    stream; `partial`: the page budget ran out before the job's last event."""

    events: List[Event] = field(default_factory=list)
    trimmed: bool = False
    partial: bool = False

    def as_page(self) -> Dict[str, Any]:
        return {
            "events": self.events,
            "events_trimmed": self.trimmed,
            "events_partial": self.partial,
        }


def _bounds(fields: Dict[str, Optional[str]]) -> Tuple[Optional[int], Optional[int]]:
    """(first, last) stream millisecond of the scan: None for the stream's start or end."""
    created = fields.get("created_at") or fields.get("enqueued_at")
    ended = fields.get("ended_at") if fields.get("status") in ENDED else None
    since = max(0, int(created) - CLOCK_MARGIN_MS) if created else None
    return since, int(ended) + END_MARGIN_MS if ended else None


def _own(job_id: str, entry_id: Any, raw: Dict[Any, Any]) -> List[Event]:
    # Decode only this job's entries (a joined entry names a second job under +job_id).
    wanted = job_id.encode()
    if raw.get(b"job_id") != wanted and raw.get(JOINED_JOB_ID) != wanted:
        return []
    return [e for e in entry_events(entry_id, raw) if e.get("job_id") == job_id]


def scan_job_events(
    client: redis.Redis, keys: KeySpace, job_id: str, fields: Dict[str, Optional[str]]
) -> JobEvents:
    """The events of job `job_id` still in the stream; `fields`: its status, created_at,
    enqueued_at and ended_at as stored."""
    since, until = _bounds(fields)
    found = JobEvents()
    start, end = "-" if since is None else f"{since}-0", "+" if until is None else f"{until}-0"
    for _ in range(PAGES):
        entries: Any = client.xrange(keys.events, start, end, count=PAGE)
        for entry_id, raw in entries:
            found.events += _own(job_id, entry_id, raw)
        if len(entries) < PAGE:
            break
        start = "(" + text(entries[-1][0])
    else:
        found.partial = True
    found.trimmed = _trimmed(client, keys, since, found.events)
    return found


def _trimmed(
    client: redis.Redis, keys: KeySpace, since: Optional[int], events: List[Event]
) -> bool:
    """Whether the job's oldest events are gone: its first event found (if any) is not the
    one that stored it, and the stream no longer reaches back to where the scan began."""
    if events and events[0].get("event") in CREATED:
        return False
    first: Any = client.xrange(keys.events, "-", "+", count=1)
    if not first:
        return True  # every job has the event that stored it: the stream lost it
    return since is None or int(text(first[0][0]).partition("-")[0]) > since
