"""The Lua steps a running job uses to report on itself: `job.save_meta()` and
`job.set_progress()` (lua/save_meta.lua, lua/progress.lua). Beside steps.py, which holds
the job lifecycle's steps and is the only other caller of scripts."""

from __future__ import annotations

from typing import Optional

import redis

from rqconc.store.keys import KeySpace
from rqconc.store.scripts import ProgressReply, script


class ReportSteps:
    """The reporting steps bound to one client and namespace."""

    def __init__(self, client: redis.Redis, keys: KeySpace) -> None:
        self.client = client
        self.keys = keys

    def save_meta(self, job_id: str, meta_json: str) -> bool:
        """Store the job's meta; False if the job does not exist."""
        return bool(script("save_meta")(self.client, [self.keys.job(job_id)], [meta_json]))

    def progress(self, job_id: str, fraction: float, message: Optional[str]) -> ProgressReply:
        keys = [self.keys.job(job_id), self.keys.events]
        args = [job_id, repr(float(fraction)), message or "", "0" if message is None else "1"]
        return ProgressReply(int(script("progress")(self.client, keys, args)))
