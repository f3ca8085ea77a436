"""The event stream: every job transition, appended by the Lua step that makes it.

Events live in a capped Redis stream (`{ns}:events`, about the latest 10,000), each one a
dict: `event` (queued, scheduled, deferred, started, finished, failed, retry, requeued,
interrupted, canceled; `progress` from `job.set_progress()`), `job_id`, `queue`, `ts` (ms
since the epoch), `worker` (empty for client-side steps), `func`, `attempt` (the 1-based
execution it is about: the run that ended for failed and retry, else the current or next
one) and step-specific fields: `exc_type` and `exc_message` (its first 1,000 bytes) on failed
and retry, `run_time` (seconds) on finished, `progress` and `message` on progress.

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
from rqconc.queue.keys import KeySpace
from rqconc.queue.steps import text

Event = Dict[str, Any]
BLOCK_MS = 1000


def _decode(entry_id: Any, raw: Dict[Any, Any]) -> Event:
    event: Event = {text(k): text(v) for k, v in raw.items()}
    event["ts"] = int(event.get("ts") or 0)
    if event.get("attempt", "").isdigit():
        event["attempt"] = int(event["attempt"])
    if "run_time" in event:
        try:
            event["run_time"] = float(event["run_time"])
        except ValueError:
            pass  # only a corrupt write: shown as it is
    event["id"] = text(entry_id)
    return event


class EventStream:
    """The events of one namespace."""

    def __init__(self, connection: ConnectionLike = None, namespace: str = "rqconc") -> None:
        self.client: redis.Redis = connect(connection)
        self.key = KeySpace(namespace).events

    def latest(self, count: int = 100) -> List[Event]:
        """The latest `count` events, oldest first."""
        with translated_errors(self.client):
            entries: Any = self.client.xrevrange(self.key, count=count)
        return [_decode(i, raw) for i, raw in reversed(entries)]

    def for_job(self, job_id: str) -> List[Event]:
        """The events of one job still in the stream, in order."""
        with translated_errors(self.client):
            entries: Any = self.client.xrange(self.key)
        events = [_decode(i, raw) for i, raw in entries]
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
                    yield _decode(entry_id, raw)

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
                handler(_decode(entry_id, raw))
                with translated_errors(self.client):
                    self.client.xack(self.key, group, entry_id)
                shipped += 1
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
