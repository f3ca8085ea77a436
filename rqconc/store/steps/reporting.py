"""The Lua steps a running job uses to report on itself: `job.save_meta()`,
`job.set_progress()` and `job.log()` (lua/save_meta.lua, lua/progress.lua, lua/job_log.lua,
and lua/seal_log.lua once its run ended). Beside core.py, which holds the job lifecycle's
steps."""

from __future__ import annotations

from typing import Optional, Sequence

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

    def log(self, job_id: str, lines: Sequence[str]) -> bool:
        """Append lines to the job's log, within its bounds; False if the job is gone."""
        keys = [self.keys.job(job_id), self.keys.log(job_id)]
        return bool(script("job_log")(self.client, keys, list(lines)))

    def seal_log(self, job_id: str) -> int:
        """After a run that logged: the log expires with the job (lua/seal_log.lua)."""
        return int(
            script("seal_log")(self.client, [self.keys.job(job_id), self.keys.log(job_id)], [])
        )
