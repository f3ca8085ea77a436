"""What a job tells about itself while it runs: `meta` saved with `save_meta()`, and
`set_progress(fraction, message)` read back by any client as `progress` (a mixin of Job)."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, Optional, Tuple

import redis

from rqconc.connection.clients import translated_errors
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import ProgressReply, text
from rqconc.store.steps.reporting import ReportSteps


def check_progress(fraction: Any, message: Any) -> None:
    """ValueError unless `fraction` is a number from 0.0 to 1.0 and `message` None or a str."""
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise ValueError(f"progress must be a number from 0.0 to 1.0, not {fraction!r}")
    if not (math.isfinite(fraction) and 0.0 <= fraction <= 1.0):
        raise ValueError(f"progress must be from 0.0 to 1.0, not {fraction!r}")
    if message is not None and not isinstance(message, str):
        raise ValueError(f"a progress message must be a str, not {message!r}")


class Reporting:
    """`meta`, `save_meta()`, `set_progress()` and `progress` of a `Job`."""

    id: str
    connection: redis.Redis
    _keys: KeySpace
    _fields: Dict[str, str]
    _missing: Any

    @property
    def meta(self) -> Dict[str, Any]:
        """The job's meta, as of the last fetch; change it in place and `save_meta()`."""
        cached: Optional[Dict[str, Any]] = self.__dict__.get("_meta")
        if cached is None:
            stored = self._fields.get("meta")
            if stored is None and self.__dict__.pop("_meta_unread", False):
                with translated_errors(self.connection):
                    raw = self.connection.hget(self._keys.job(self.id), "meta")
                stored = None if raw is None else text(raw)
            cached = json.loads(stored or "{}")
            self.__dict__["_meta"] = cached
        return cached

    def mark_meta_unread(self) -> None:
        """The fields were read without `meta` (a worker's take returns only what a run
        needs): `meta` is read from Redis on first use."""
        self.__dict__["_meta_unread"] = True

    def _forget_meta(self) -> None:
        """After a reload: `meta` is read from the fields again."""
        self.__dict__.pop("_meta", None)
        self.__dict__.pop("_meta_unread", None)

    def save_meta(self) -> None:
        """Store `meta` as it is now (JSON); NoSuchJob if the job is gone."""
        data = json.dumps(self.meta)
        with translated_errors(self.connection):
            stored = ReportSteps(self.connection, self._keys).save_meta(self.id, data)
        if not stored:
            raise self._missing()
        self._fields["meta"] = data

    def set_progress(self, fraction: float, message: Optional[str] = None) -> bool:
        """Store how far the job is (0.0 to 1.0, and a message) and append a `progress`
        event. ValueError for a fraction outside 0..1; False (nothing stored) when the job
        no longer runs (canceled, timed out or ended meanwhile)."""
        check_progress(fraction, message)
        with translated_errors(self.connection):
            code = ReportSteps(self.connection, self._keys).progress(self.id, fraction, message)
        if code is ProgressReply.MISSING:
            raise self._missing()
        return code is ProgressReply.STORED

    @property
    def progress(self) -> Tuple[float, Optional[str]]:
        """(fraction, message) as the job last reported it, read from Redis; (0.0, None)
        before it reported any."""
        with translated_errors(self.connection):
            status, fraction, message = self.connection.hmget(
                self._keys.job(self.id), ["status", "progress", "progress_message"]
            )
        if status is None:
            raise self._missing()
        if fraction is None:
            return 0.0, None
        return float(text(fraction)), None if message is None else text(message)
