"""The Lua steps a running job uses to report on itself: `job.save_meta()` and
`job.set_progress()` (lua/save_meta.lua, lua/progress.lua). Beside core.py, which holds
the job lifecycle's steps."""

from __future__ import annotations

from typing import Optional

from rqconc.store.scripts import ProgressReply, script
from rqconc.store.steps.bound import BoundSteps


class ReportSteps(BoundSteps):
    """The reporting steps bound to one client and namespace."""

    def save_meta(self, job_id: str, meta_json: str) -> bool:
        """Store the job's meta; False if the job does not exist."""
        return bool(script("save_meta")(self.client, [self.keys.job(job_id)], [meta_json]))

    def progress(self, job_id: str, fraction: float, message: Optional[str]) -> ProgressReply:
        keys = [self.keys.job(job_id), self.keys.events]
        args = [job_id, repr(float(fraction)), message or "", "0" if message is None else "1"]
        return ProgressReply(int(script("progress")(self.client, keys, args)))
