"""Eager mode, for application tests (SPEC 12, docs/testing.md): `Queue(..., eager=True)`
or RQCONC_EAGER=1 runs each job inline at enqueue, with no Redis at all.

It behaves as a worker would where a test can tell: the call is validated and serialized
by the queue's own `prepare` (the same checks as enqueue), and run by the execution path
the worker's runner uses (rqconc/queue/execution.py: the allow-list of RQCONC_EAGER_ALLOW,
the function resolved by its stored name, the arguments decoded, the result serialized);
the job's `timeout` ends it with `JobTimeout`; retries follow the job's policy without
their delays; `unique_key`/`unique_for`, `ttl`, pause and limits are kept in this process
(memory.py); callbacks, dependencies, flows (`Next`) and groups run inline, in the order a
worker would run them. Refused with one line: a delay (`enqueue_at`, `enqueue_in`,
`debounce`), which an inline run cannot wait for. Not kept: webhooks (checked, not called).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

from rqconc.queue import current
from rqconc.queue.eager import memory
from rqconc.queue.eager.group import EagerGroup
from rqconc.queue.eager.job import EagerJob
from rqconc.queue.eager.memory import find_job, forget_jobs
from rqconc.queue.eager.run import (
    allow_hint,
    eager_allow,
    followup_fields,
    refuse_delay,
    timed_call,
    timeout_of,
)
from rqconc.queue.execution import Execution, Outcome
from rqconc.queue.job import Job
from rqconc.queue.job_logs import keep_job_records
from rqconc.queue.limits.options import with_expiry
from rqconc.queue.options import Call, refuse, take_options
from rqconc.queue.retry import policy_of
from rqconc.queue.workflow.flows import Next
from rqconc.queue.workflow.signature import signature_of
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import now_ms
from rqconc.store.status import JobStatus

Prepared = Tuple[str, int, Dict[str, str]]
NextReady = Tuple["EagerRunner", str, Dict[str, str]]  # a Next's runner, id and fields
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


class Owner(Protocol):
    """What the runner needs of its Queue (rqconc/queue/queue.py imports this module)."""

    name: str
    keys: KeySpace

    def prepare(self, calls: Sequence[Call], options: Dict[str, Any]) -> List[Prepared]: ...


def eager_mode(eager: Optional[bool]) -> bool:
    """`Queue(eager=...)`, or when None, the environment variable RQCONC_EAGER."""
    if eager is not None:
        if not isinstance(eager, bool):
            raise ValueError(f"eager must be True, False or None, not {eager!r}")
        return eager
    value = os.environ.get("RQCONC_EAGER", "")
    if value.strip().lower() in _TRUE:
        return True
    if value.strip().lower() in _FALSE:
        return False
    raise ValueError(f"RQCONC_EAGER must be 1 or 0 (or true/false, yes/no, on/off), not {value!r}")


class EagerRunner:
    """Runs the jobs of one eager Queue as they are enqueued."""

    def __init__(self, queue: Owner) -> None:
        self.queue = queue
        self.execution = Execution(
            eager_allow(), True, self._parent, self._ready_next, allow_hint=allow_hint
        )

    def run(
        self, calls: Sequence[Call], options: Dict[str, Any], due_ms: Optional[int]
    ) -> List[Job]:
        """Validate every call as enqueue does (nothing runs if one is refused), then run
        each in order; the jobs returned (EagerJob) have ended, unless their queue is paused
        or a parent of theirs has not ended."""
        if due_ms is not None:
            raise refuse_delay(self.queue, "wait until a job is due (enqueue_at, enqueue_in)")
        if options.get("debounce") is not None:
            raise refuse_delay(self.queue, "wait out a debounce")
        prepared = self.queue.prepare(calls, options)
        unique = options.get("unique_key")
        if unique is None:
            return list(self.run_prepared(prepared, {}))
        if len(prepared) != 1:
            raise ValueError("unique_key holds one job: enqueue_many cannot take it")
        holder = memory.unique_holder(self.queue.keys.namespace, unique, now_ms())
        if holder is not None:  # as enqueue_unique.lua: the job holding the key instead
            return [holder]
        return list(self.run_prepared(prepared, {}))

    def run_prepared(self, prepared: Sequence[Prepared], links: Dict[str, str]) -> List[EagerJob]:
        namespace, now = self.queue.keys.namespace, now_ms()
        for job_id, _, fields in prepared:
            if find_job(job_id, namespace) is not None:
                raise ValueError(f"a job with id {job_id!r} already exists; nothing was enqueued")
            for parent in json.loads(fields.get("depends_on", "[]")):
                if find_job(parent, namespace) is None:
                    raise ValueError(
                        f"depends_on names job {parent!r}, which does not exist (or expired); "
                        "nothing was enqueued"
                    )
        jobs = [
            EagerJob(job_id, self.queue.keys, {**with_expiry(fields, None, now), **links})
            for job_id, _, fields in prepared
        ]
        for job in jobs:
            job._fields["enqueued_at"] = str(now)
            memory.remember(job)
            if "unique_key" in job._fields:
                memory.hold_unique(job, job._fields["unique_key"])
        for job in jobs:
            self.perform(job)
        return jobs

    def perform(self, job: EagerJob) -> None:
        """Run one job to its end, or keep it as a worker would find it: held by its
        paused queue, deferred behind a parent that has not ended, canceled."""
        if memory.is_paused(job.namespace, job.queue_name or "default"):
            memory.hold(self.perform, job)
            return
        parents = [find_job(p, job.namespace) for p in job.depends_on]
        if not all(p is None or memory.has_ended(p) for p in parents):
            memory.wait_for_parents(self.perform, job)
            return
        why_not = self._blocked(job)
        if why_not is not None:
            self._end(job, JobStatus.CANCELED, exc=("rqconc.errors.JobCanceled", why_not, ""))
            return
        outcome = self._attempts(job)
        if outcome.exc is not None:
            self._end(job, JobStatus.FAILED, exc=outcome.exc)
            self._followups(job, "failure")
            return
        if outcome.next_stage is not None:
            self._link_next(job, outcome.next_stage)
        self._end(job, JobStatus.FINISHED, result=outcome.result)
        self._followups(job, "success")
        if job.next_stage is not None:
            outcome.next_stage[0].perform(job.next_stage)

    def _attempts(self, job: EagerJob) -> Outcome:
        """Run the job until it succeeds or its retry policy gives up (no delays)."""
        fields = job._fields
        policy, seconds = policy_of(fields.get("retry")), timeout_of(fields)
        keep_job_records()  # the `rqconc.job` logger's lines are kept, as on a worker
        while True:
            fields["status"], fields["started_at"] = JobStatus.STARTED.value, str(now_ms())
            fields.pop("expires_at", None)  # started: a ttl no longer applies
            with current.running(job):  # rqconc.get_current_job() inside, as on a worker
                outcome = self.execution.run(fields, timed_call(seconds))
            fields["attempts"] = str(int(fields.get("attempts", "0")) + 1)
            if outcome.exc is None or not outcome.exc_mro:
                return outcome
            if policy.next_delay(outcome.exc_mro, int(fields["attempts"])) is None:
                return outcome
            fields["exc_type"], fields["exc_message"], fields["traceback"] = outcome.exc

    def _blocked(self, job: EagerJob) -> Optional[str]:
        """Why a job may not run: past its ttl, or a parent that did not finish."""
        expires_at = job._fields.get("expires_at")
        if expires_at is not None and now_ms() > int(expires_at):
            return "expired: not started within its ttl"
        for parent_id in job.depends_on:
            parent = find_job(parent_id, job.namespace)
            ok = parent is not None and parent._fields.get("status") == JobStatus.FINISHED
            if not ok and not job.allows_failure:
                return f"job {parent_id}, which it depends on, did not finish"
        return None

    def _parent(self, parent_id: str) -> Job:
        """A callback's parent job (only its id, if this process forgot it)."""
        return find_job(parent_id, self.queue.keys.namespace) or EagerJob(
            parent_id, self.queue.keys, {}
        )

    def _ready_next(self, stage: Next) -> NextReady:
        """A flow's next stage validated and serialized (a refusal fails this stage, as in
        a worker); it runs once this stage has ended."""
        kwargs = dict(stage.kwargs)
        options = take_options(kwargs)
        refuse(options, ("depends_on",), "a flow's next stage (it starts when this one completes)")
        runner = self._runner_of(stage)
        prepared = runner.queue.prepare([(stage.func, tuple(stage.args), kwargs)], options)
        (next_id, _, fields), namespace = prepared[0], runner.queue.keys.namespace
        if find_job(next_id, namespace) is not None:
            raise ValueError(
                f"Next(..., job_id={next_id!r}): a job with that id already exists; "
                "the next stage was not enqueued"
            )
        return runner, next_id, fields

    def _link_next(self, job: EagerJob, ready: NextReady) -> None:
        runner, next_id, fields = ready
        links = {"flow_id": job._fields.get("flow_id", job.id), "prev_id": job.id}
        job.next_stage = EagerJob(next_id, runner.queue.keys, {**fields, **links})
        job.next_stage._fields["enqueued_at"] = str(now_ms())
        job._fields["next_id"] = next_id
        memory.remember(job.next_stage)

    def _runner_of(self, stage: Any) -> EagerRunner:
        """The eager runner of a `Next`'s queue: its own if it is an eager Queue, else one
        of that name in this queue's namespace (an eager flow never reaches Redis)."""
        target = stage.queue
        runner = getattr(target, "_eager", None)
        if isinstance(runner, EagerRunner):
            return runner
        name = getattr(target, "name", target)
        twin = type(self.queue)(name, namespace=self.queue.keys.namespace, eager=True)  # type: ignore[call-arg]
        return twin._eager  # type: ignore[attr-defined]

    def _followups(self, job: EagerJob, kind: str) -> None:
        """Run the job's on_success / on_failure callbacks (webhooks are not called)."""
        for spec in json.loads(job._fields.get(f"on_{kind}_jobs", "[]")):
            if spec.get("name") not in ("on_success", "on_failure"):
                continue
            followup = EagerJob(os.urandom(16).hex(), job._keys, followup_fields(job, kind, spec))
            followup._fields["enqueued_at"] = str(now_ms())
            job.followups.append(followup)
            memory.remember(followup)
            self.perform(followup)

    def _end(
        self,
        job: EagerJob,
        status: JobStatus,
        result: Optional[str] = None,
        exc: Optional[Tuple[str, str, str]] = None,
    ) -> None:
        fields = job._fields
        fields["status"], fields["ended_at"] = status.value, str(now_ms())
        if result is not None:
            fields["result"] = result
        if exc is not None:
            fields["exc_type"], fields["exc_message"], fields["traceback"] = exc
        memory.release_waiting()  # its dependents, if they waited for it

    # ---- groups (rqconc/queue/workflow/groups.py calls Queue.enqueue_group) ----
    def enqueue_group(self, signatures: Sequence[Any], chord: Any = None) -> EagerGroup:
        """Run every job of the group in order, then the chord's `func(results, *args)` when
        all of them finished; an object with `Group`'s interface."""
        calls = [signature_of(call) for call in signatures]
        if not calls:
            raise ValueError("a group needs at least one job")
        callback = None if chord is None else signature_of(chord)
        prepared = [
            self.queue.prepare([(s.func, tuple(s.args), dict(s.kwargs))], dict(s.options))[0]
            for s in calls
        ]
        if callback is not None:  # checked before any job runs, as a real enqueue would
            probe = [(callback.func, ([], *callback.args), dict(callback.kwargs))]
            self.queue.prepare(probe, dict(callback.options))
        group_id = os.urandom(16).hex()
        jobs = self.run_prepared(prepared, {"group_id": group_id})
        chord_job = None
        if callback is not None and all(j.status is JobStatus.FINISHED for j in jobs):
            results = [job.return_value for job in jobs]
            call = (callback.func, (results, *callback.args), dict(callback.kwargs))
            chord_job = self.run_prepared(
                self.queue.prepare([call], dict(callback.options)), {"group_id": group_id}
            )[0]
        return EagerGroup(group_id, jobs, chord_job)


__all__ = ["EagerRunner", "eager_mode", "find_job", "forget_jobs"]
