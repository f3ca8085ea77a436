"""The cron steps (lua/cron_*.lua): registering an entry (queue/schedule/cron.py), the
scheduler's leader lease and the record of each tick enqueued (worker/scheduler.py)."""

from __future__ import annotations

from typing import Sequence

from rqconc.store.scripts import (
    CronAdvanceReply,
    CronLeaseReply,
    CronPutReply,
    CronSkipReply,
    now_ms,
    script,
)
from rqconc.store.steps.bound import BoundSteps


class CronSteps(BoundSteps):
    """The cron steps bound to one client and namespace."""

    def lease(self, holder: str, lease_ms: int) -> CronLeaseReply:
        """Take or renew the scheduler's leader lease for `holder`; a `lease_ms` of 0
        releases it, if `holder` holds it."""
        code, _ = script("cron_lease")(self.client, [self.keys.scheduler_lease], [holder, lease_ms])
        return CronLeaseReply(code)

    def advance(
        self,
        cron_id: str,
        version: str,
        queue: str,
        tick: str,
        created: bool,
        job_id: str,
        retention_ms: int,
    ) -> CronAdvanceReply:
        """Record that tick's job `job_id` (`created` by this caller) is enqueued (`tick` as
        intervals.tick_text writes it); UNDONE
        deletes the job this caller created when its entry changed or the tick ran before."""
        k = self.keys
        keys = [k.crons, k.cron_last, k.cron_planned(cron_id), k.job(job_id)]
        keys += [k.scheduled(queue), k.queue(queue), k.cron_fired]
        args = [cron_id, version, tick, "1" if created else "0", job_id, now_ms(), retention_ms]
        return CronAdvanceReply(script("cron_advance")(self.client, keys, args))

    def put(
        self, cron_id: str, queue: str, version: str, entry: str, planned: Sequence[str]
    ) -> CronPutReply:
        """Write the entry JSON (or remove it, with ""), taking back the `planned` jobs of
        the current entry (of `queue`, version `version`, as the caller read them)."""
        k = self.keys
        keys = [
            k.crons,
            k.cron_last,
            k.cron_planned(cron_id),
            k.scheduled(queue),
            k.queue(queue),
            k.cron_fired,
            *map(k.job, planned),
        ]
        args = [cron_id, version, entry, len(planned), *planned]
        code, _ = script("cron_put")(self.client, keys, args)
        return CronPutReply(code)

    def skip(
        self, cron_id: str, version: str, tick: str, job_id: str, queue: str, func: str
    ) -> CronSkipReply:
        """Skip tick `tick` (job id `job_id`, never made) of a skip_if_running entry if its
        previous job still waits or runs, with a `skipped` event (lua/cron_skip.lua)."""
        k = self.keys
        keys = [k.crons, k.cron_last, k.cron_planned(cron_id), k.events]
        args = [cron_id, version, tick, job_id, queue, func, k.prefix]
        return CronSkipReply(script("cron_skip")(self.client, keys, args))

    def retire(self, cron_id: str, version: str, retention_ms: int) -> bool:
        """Remove an entry with nothing left to fire, keeping its enqueued jobs; False if
        it changed or is gone (lua/cron_retire.lua)."""
        k = self.keys
        keys = [k.crons, k.cron_last, k.cron_fired, k.cron_planned(cron_id)]
        return bool(script("cron_retire")(self.client, keys, [cron_id, version, retention_ms]))
