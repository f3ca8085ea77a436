"""The event stream: every job transition, appended by the Lua step that makes it.

Events live in a capped Redis stream (`{ns}:events`, about the latest 10,000), each one a
dict: `event` (queued, scheduled, deferred, started, finished, failed, retry, requeued,
interrupted, canceled; `progress` from `job.set_progress()`), `job_id`, `queue`, `ts` (ms
since the epoch), `worker` (empty for client-side steps), `func`, `attempt` (the 1-based
execution it is about: the run that ended for failed and retry, else the current or next
one) and step-specific fields: `exc_type` and `exc_message` (its first 1,000 bytes) on failed
and retry, `run_time` (seconds) on finished, `progress` and `message` on progress.

The step that completes a job and takes the next stores its two events (`finished`,
`started`) in one stream entry; every reader here splits it (`entry_events`), so each event
comes out on its own, with an `id` of its own.

`EventStream.ship(handler)` is the hook to send events elsewhere (Elasticsearch, a log
pipeline): it reads through a consumer group, so several shippers share the work, each
event is handled once by one of them, and a restarted shipper resumes where the group
stopped (events it had not acknowledged are handed out again).
"""

from __future__ import annotations

import socket
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import redis

from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import text

Event = Dict[str, Any]
BLOCK_MS = 1000


# The step that completes a job and takes the next writes both events as one entry: the
# second's field names carry this prefix, and it shares the first's ts and worker
# (lua/include/events.lua, emit_with).
JOINED = "+"


def _typed(event: Event, event_id: str) -> Event:
    event["ts"] = int(event.get("ts") or 0)
    if event.get("attempt", "").isdigit():
        event["attempt"] = int(event["attempt"])
    if "run_time" in event:
        try:
            event["run_time"] = float(event["run_time"])
        except ValueError:
            pass  # only a corrupt write: shown as it is
    event["id"] = event_id
    return event


def entry_events(entry_id: Any, raw: Dict[Any, Any]) -> List[Event]:
    """The events of one stream entry, in order: one, or two for a joined entry. Each has
    its own `id`: the entry's, then the entry's + ".1" (ids to tell events apart; read
    the stream from an entry id, as `follow` does)."""
    first: Event = {}
    second: Event = {}
    for k, v in raw.items():
        name = text(k)
        if name.startswith(JOINED):
            second[name[len(JOINED) :]] = text(v)
        else:
            first[name] = text(v)
    entry = text(entry_id)
    if not second:
        return [_typed(first, entry)]
    second["ts"], second["worker"] = first.get("ts", "0"), first.get("worker", "")
    return [_typed(first, entry), _typed(second, entry + ".1")]


class EventStream:
    """The events of one namespace."""

    def __init__(self, connection: ConnectionLike = None, namespace: str = "rqconc") -> None:
        self.client: redis.Redis = connect(connection)
        self.key = KeySpace(namespace).events

    def latest(self, count: int = 100) -> List[Event]:
        """The latest `count` events, oldest first."""
        with translated_errors(self.client):
            entries: Any = self.client.xrevrange(self.key, count=count)
        events = [e for i, raw in reversed(entries) for e in entry_events(i, raw)]
        return events[-count:] if count > 0 else events

    def for_job(self, job_id: str) -> List[Event]:
        """The events of one job still in the stream, in order."""
        with translated_errors(self.client):
            entries: Any = self.client.xrange(self.key)
        events = [e for i, raw in entries for e in entry_events(i, raw)]
        return [e for e in events if e.get("job_id") == job_id]

    def follow(
        self, since: str = "$", stop: Optional[Callable[[], bool]] = None
    ) -> Iterator[Event]:
        """Events as they come (after `since`, a stream id; "$": from now on), blocking
        without polling; ends when `stop()` turns true."""
        last = since
        while not (stop and stop()):
            with translated_errors(self.client):
                reply: Any = self.client.xread({self.key: last}, block=BLOCK_MS, count=500)
            for _, entries in reply or []:
                for entry_id, raw in entries:
                    last = text(entry_id)
                    yield from entry_events(entry_id, raw)

    def ship(
        self,
        handler: Callable[[Event], None],
        group: str = "shippers",
        consumer: Optional[str] = None,
        stop: Optional[Callable[[], bool]] = None,
        batch: int = 100,
    ) -> int:
        """Call `handler(event)` for each event not yet shipped by `group`; an event is
        acknowledged only after its handler returned. Returns how many were shipped."""
        consumer = consumer or f"{socket.gethostname()}.{id(self)}"
        self._ensure_group(group)
        shipped = 0
        # First what this consumer received before but never acknowledged, then new ones.
        position = "0"
        while not (stop and stop()):
            with translated_errors(self.client):
                reply = self.client.xreadgroup(
                    group, consumer, {self.key: position}, count=batch, block=BLOCK_MS
                )
            entries = _entries(reply)
            if position == "0" and not entries:
                position = ">"
                continue
            for entry_id, raw in entries:
                for event in entry_events(entry_id, raw):  # acknowledged once all are handled
                    handler(event)
                    shipped += 1
                with translated_errors(self.client):
                    self.client.xack(self.key, group, entry_id)
        return shipped

    def _ensure_group(self, group: str) -> None:
        with translated_errors(self.client):
            try:
                self.client.xgroup_create(self.key, group, id="0", mkstream=True)
            except redis.exceptions.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise


def _entries(reply: Any) -> List[Tuple[Any, Dict[Any, Any]]]:
    return [entry for _, entries in (reply or []) for entry in entries if entry[1]]
