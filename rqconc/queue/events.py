"""The event stream: every job transition, appended by the Lua step that makes it.

Events live in a Redis stream (`{ns}:events`): every entry newer than the workers'
`--events-retention` (24 h), at most `--events-max` (1,000,000) entries, trimmed by their
maintenance pass, not by the steps (rqconc/worker/event_retention.py). Each event is a
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
stopped: under its stable consumer name (the host's) it gets again what it had been handed
but had not acknowledged, and it claims what other consumers left unacknowledged for long
(a crashed shipper under another name). Entries the trim drops before a group acknowledged
them are counted (`stats()["dropped"]`, rqconc_events_dropped_total).
"""

from __future__ import annotations

import socket
from typing import Any, Callable, Dict, Iterator, List, Optional

import redis

from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import text

Event = Dict[str, Any]
BLOCK_MS = 1000
PAGE = 1000  # entries per XRANGE of a scan
# How long another consumer's entry stays unacknowledged before a starting shipper takes it
# over: far longer than a live shipper takes for one batch.
CLAIM_IDLE_SECONDS = 60.0


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
        self.keys = KeySpace(namespace)
        self.key = self.keys.events

    def latest(self, count: int = 100) -> List[Event]:
        """The latest `count` events, oldest first."""
        with translated_errors(self.client):
            entries: Any = self.client.xrevrange(self.key, count=count)
        events = [e for i, raw in reversed(entries) for e in entry_events(i, raw)]
        return events[-count:] if count > 0 else events

    def after(self, entry_id: str, count: int) -> List[Event]:
        """Up to `count` entries' events after stream id `entry_id` (a live feed's next read)."""
        with translated_errors(self.client):
            entries: Any = self.client.xrange(self.key, f"({entry_id}", "+", count=count)
        return [event for i, raw in entries for event in entry_events(i, raw)]

    def dropped(self) -> int:
        """Entries trimmed before a consumer group acknowledged them (one HGET; `stats`
        tells the rest)."""
        with translated_errors(self.client):
            return int(self.client.hget(self.keys.metrics, "events_dropped") or 0)

    def stats(self) -> Dict[str, Any]:
        """`entries` in the stream, the `oldest` one's ms (None when empty), `dropped`: those
        trimmed before a consumer group acknowledged them (rqconc_events_dropped_total), and
        `groups`: each consumer group's name, consumers, pending and last delivered id."""
        with translated_errors(self.client):
            pipe = self.client.pipeline(transaction=False)
            pipe.xlen(self.key)
            pipe.xrange(self.key, count=1)
            pipe.hget(self.keys.metrics, "events_dropped")
            entries, head, dropped = pipe.execute()
            groups: Any = self.client.xinfo_groups(self.key) if self.client.exists(self.key) else []
        return {
            "entries": int(entries),
            "oldest": int(text(head[0][0]).split("-")[0]) if head else None,
            "dropped": int(dropped or 0),
            "groups": [
                {
                    "name": text(g["name"]),
                    "consumers": int(g["consumers"]),
                    "pending": int(g["pending"]),
                    "last_delivered_id": text(g["last-delivered-id"]),
                }
                for g in groups
            ],
        }

    def for_job(self, job_id: str) -> List[Event]:
        """The events of one job still in the stream, in order (read a page at a time: the
        stream may hold up to --events-max entries)."""
        found: List[Event] = []
        start = "-"
        while True:
            with translated_errors(self.client):
                entries: Any = self.client.xrange(self.key, start, "+", count=PAGE)
            found += [e for i, raw in entries for e in entry_events(i, raw)]
            if len(entries) < PAGE:
                return [e for e in found if e.get("job_id") == job_id]
            start = "(" + text(entries[-1][0])

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
        claim_idle: float = CLAIM_IDLE_SECONDS,
    ) -> int:
        """Call `handler(event)` for each event not yet shipped by `group`; an entry is
        acknowledged only after the handler returned for each of its events. Returns how
        many events were shipped.

        `consumer` names this shipper in the group; the default, this host's name, is the
        same after a restart, so a shipper killed mid-batch gets again, first, every entry
        it had been handed but had not acknowledged. Before that it claims (XAUTOCLAIM) the
        entries other consumers of the group left unacknowledged for `claim_idle` seconds:
        those of a crashed shipper that comes back under another name (a new container)."""
        consumer = consumer or socket.gethostname()
        self._ensure_group(group)
        self._claim_stale(group, consumer, claim_idle, batch)
        shipped = 0
        # First what this consumer was handed before but never acknowledged, then new ones.
        position = "0"
        while not (stop and stop()):
            with translated_errors(self.client):
                reply: Any = self.client.xreadgroup(
                    group, consumer, {self.key: position}, count=batch, block=BLOCK_MS
                )
            entries = [entry for _, listed in (reply or []) for entry in listed]
            if position == "0" and not entries:
                position = ">"
                continue
            for entry_id, raw in entries:
                # An entry trimmed before it was acknowledged comes back empty: acknowledged
                # too (the trim counted it in rqconc_events_dropped_total), or it would come
                # back at every start.
                for event in entry_events(entry_id, raw) if raw else ():
                    handler(event)
                    shipped += 1
                with translated_errors(self.client):
                    self.client.xack(self.key, group, entry_id)
        return shipped

    def _claim_stale(self, group: str, consumer: str, idle: float, batch: int) -> None:
        """Make `consumer` the owner of every entry of `group` pending elsewhere for `idle`
        seconds or more (up to `batch` per round trip)."""
        cursor = "0-0"
        while True:
            with translated_errors(self.client):
                reply = self.client.xautoclaim(
                    self.key, group, consumer, int(idle * 1000), cursor, count=batch
                )
            cursor = text(reply[0])
            if cursor in ("0-0", "0"):
                return

    def _ensure_group(self, group: str) -> None:
        with translated_errors(self.client):
            try:
                self.client.xgroup_create(self.key, group, id="0", mkstream=True)
            except redis.exceptions.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
