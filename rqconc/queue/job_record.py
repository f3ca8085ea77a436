"""What a job is as stored, for both clients: `Job` (rqconc/queue/job.py) and
`rqconc.aio.AsyncJob` read the same hash fields the same way, decode values with the same
serializers and the same pickle opt-in, and so show the same read-only fields.

A job's hash stores only the fields that differ from their defaults (enqueue is cheaper and
a queued job smaller): every reader treats a missing field as its default, here, in
rqconc/worker/ and in the Lua steps (lua/include/, complete.lua).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

from rqconc import errors
from rqconc.queue.job_fields import description_of
from rqconc.queue.retry import Retry
from rqconc.queue.serialization import get_serializer
from rqconc.store.defaults import (
    DEFAULT_FAILURE_TTL,
    DEFAULT_PRIORITY,
    DEFAULT_RESULT_TTL,
    DEFAULT_TIMEOUT,
)
from rqconc.store.keys import KeySpace

# A field the hash does not store has its default (rqconc/store/defaults.py). Absent too:
# empty args "[]" / kwargs "{}", serializer "json", attempts and lost 0, no retry (the
# default policy), meta, description (derived from the call), depends_on and on_* fields.


def _datetime(value: Optional[str]) -> Optional[datetime]:
    return datetime.fromtimestamp(int(value) / 1000, tz=timezone.utc) if value else None


class JobRecord:
    """A job's stored fields as of its last read, and how its values decode."""

    id: str
    namespace: str
    allow_pickle: bool
    _keys: KeySpace
    _fields: Dict[str, str]

    # ---- fields as of the last fetch ----
    @property
    def key(self) -> str:
        return self._keys.job(self.id)

    def _loads(self, serializer: str, data: str, what: str) -> Any:
        """A stored value decoded; a pickled one only if this job's queue opted in."""
        if serializer == "pickle" and not self.allow_pickle:
            raise errors.NotAllowed(
                f"job {self.id} stores its {what} pickled, and this client did not opt in "
                "to pickle (unpickling runs code chosen by whoever can write to Redis); read it "
                "through Queue(..., serializer='pickle') or Job.fetch(..., allow_pickle=True) "
                "if your Redis is trusted"
            )
        return get_serializer(serializer).loads(data)

    def _field(self, name: str, default: Optional[str] = None) -> Optional[str]:
        return self._fields.get(name, default)

    @property
    def func_name(self) -> Optional[str]:
        return self._field("func")

    @property
    def queue_name(self) -> Optional[str]:
        return self._field("queue")

    @property
    def serializer(self) -> str:
        return self._field("serializer", "json") or "json"

    @property
    def args(self) -> List[Any]:
        return self._loads(self.serializer, self._field("args", "[]") or "[]", "arguments")

    @property
    def kwargs(self) -> Dict[str, Any]:
        return self._loads(self.serializer, self._field("kwargs", "{}") or "{}", "arguments")

    @property
    def priority(self) -> int:
        return int(self._field("priority") or DEFAULT_PRIORITY)

    @property
    def timeout(self) -> float:
        return float(self._field("timeout") or DEFAULT_TIMEOUT)

    @property
    def soft_timeout(self) -> Optional[float]:
        """Seconds after which JobSoftTimeout is raised inside the job; None: no soft one."""
        soft = self._field("soft_timeout")
        return float(soft) if soft else None

    @property
    def result_ttl(self) -> int:
        return int(self._field("result_ttl") or DEFAULT_RESULT_TTL)

    @property
    def failure_ttl(self) -> int:
        return int(self._field("failure_ttl") or DEFAULT_FAILURE_TTL)

    @property
    def retry(self) -> Optional[Retry]:
        stored = self._field("retry")
        return Retry.from_json(stored) if stored else None

    @property
    def description(self) -> Optional[str]:
        """As given at enqueue, else the call (None if the stored call is unreadable)."""
        return description_of(self._fields)

    @property
    def depends_on(self) -> List[str]:
        return json.loads(self._field("depends_on", "[]") or "[]")

    @property
    def allows_failure(self) -> bool:
        """Whether the job runs even when a parent fails for good (rqconc.Dependency)."""
        return self._field("allow_failure") == "1"

    @property
    def callback_of(self) -> Optional[str]:
        """For a callback or webhook job: the id of the job it reports on."""
        return self._field("callback_of")

    @property
    def worker_name(self) -> Optional[str]:
        return self._field("worker")

    @property
    def created_at(self) -> Optional[datetime]:
        return _datetime(self._field("created_at"))

    @property
    def enqueued_at(self) -> Optional[datetime]:
        return _datetime(self._field("enqueued_at"))

    @property
    def started_at(self) -> Optional[datetime]:
        return _datetime(self._field("started_at"))

    @property
    def ended_at(self) -> Optional[datetime]:
        return _datetime(self._field("ended_at"))

    def field(self, name: str) -> Optional[str]:
        """A raw stored field as of the last fetch (on_success, success_url, ...)."""
        return self._field(name)
