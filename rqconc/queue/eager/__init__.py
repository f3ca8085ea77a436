"""Eager mode, for application tests (SPEC 12, docs/testing.md): `Queue(..., eager=True)`
or RQCONC_EAGER=1 runs each job inline at enqueue, with no Redis at all.

What a worker would see is kept where a test relies on it: the call is validated and
serialized by the queue's own `prepare` (the same checks as enqueue), the function is
resolved by its stored name and called with its arguments as decoded from that JSON, and
its result must serialize too. Retries follow the job's policy without their delays;
callbacks, dependencies, flows (`Next`) and groups run inline, in the order a worker would
run them. Not kept: timeouts (nothing interrupts the function), delays (`enqueue_at` and
`enqueue_in` run at once) and webhooks (`success_url` / `failure_url` are checked, not
called).
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple

from rqconc.queue import current
from rqconc.queue.eager.group import EagerGroup
from rqconc.queue.eager.job import EagerJob
from rqconc.queue.eager.run import Attempt, attempt, call_of, followup_arguments
from rqconc.queue.flows import Next
from rqconc.queue.job import Job
from rqconc.queue.options import Call, refuse, take_options
from rqconc.queue.retry import policy_of
from rqconc.queue.signature import signature_of
from rqconc.store.keys import KeySpace
from rqconc.store.status import JobStatus
from rqconc.store.steps.core import now_ms

Prepared = Tuple[str, int, Dict[str, str]]
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
# Eager jobs by (namespace, id), for depends_on and the check that a caller's job_id is
# free. Bounded: a long test session must not grow without end (the oldest are forgotten,
# as Redis forgets jobs whose result_ttl passed).
MAX_JOBS = 100_000
_JOBS: OrderedDict[Tuple[str, str], EagerJob] = OrderedDict()


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


def forget_jobs() -> None:
    """Forget every eager job of this process: their ids are free again (a test fixture's
    teardown, when tests reuse fixed job ids)."""
    _JOBS.clear()


def find_job(job_id: str, namespace: str = "rqconc") -> Optional[EagerJob]:
    return _JOBS.get((namespace, job_id))


class EagerRunner:
    """Runs the jobs of one eager Queue as they are enqueued."""

    def __init__(self, queue: Owner) -> None:
        self.queue = queue

    def run(self, calls: Sequence[Call], options: Dict[str, Any]) -> List[Job]:
        """Validate every call as enqueue does (nothing runs if one is refused), then run
        each in order; the jobs returned (EagerJob) have ended."""
        jobs: List[Job] = list(self.run_prepared(self.queue.prepare(calls, options), {}))
        return jobs

    def run_prepared(self, prepared: Sequence[Prepared], links: Dict[str, str]) -> List[EagerJob]:
        namespace = self.queue.keys.namespace
        for job_id, _, fields in prepared:
            if (namespace, job_id) in _JOBS:
                raise ValueError(f"a job with id {job_id!r} already exists; nothing was enqueued")
            for parent in json.loads(fields.get("depends_on", "[]")):
                if (namespace, parent) not in _JOBS:
                    raise ValueError(
                        f"depends_on names job {parent!r}, which does not exist (or expired); "
                        "nothing was enqueued"
                    )
        jobs = [
            EagerJob(job_id, self.queue.keys, {**fields, **links}) for job_id, _, fields in prepared
        ]
        for job in jobs:
            _remember(job)
        for job in jobs:
            self.perform(job)
        return jobs

    def perform(self, job: EagerJob, leading: Sequence[Any] = ()) -> None:
        """Run one job to its end: `leading` arguments come first (a callback's)."""
        fields = job._fields
        fields["enqueued_at"] = str(now_ms())
        why_not = self._blocked(job)
        if why_not is not None:
            _end(job, JobStatus.CANCELED, exc=("rqconc.errors.JobCanceled", why_not, ""))
            return
        func, args, kwargs, refused = call_of(fields)
        policy = policy_of(fields.get("retry"))
        outcome = Attempt(exc=refused)
        while refused is None:
            fields["status"], fields["started_at"] = JobStatus.STARTED.value, str(now_ms())
            with current.running(job):  # rqconc.get_current_job() inside, as on a worker
                outcome = attempt(func, [*leading, *args], kwargs, job.serializer, Next)
            fields["attempts"] = str(int(fields.get("attempts", "0")) + 1)
            if outcome.exc is None or not outcome.exc_mro:
                break
            # The delay is the policy's; an eager retry runs at once.
            if policy.next_delay(outcome.exc_mro, int(fields["attempts"])) is None:
                break
            _record_failure(fields, outcome.exc)
        if outcome.exc is None and outcome.next_stage is not None:
            outcome = self._prepare_next(job, outcome)
        if outcome.exc is not None:
            _end(job, JobStatus.FAILED, exc=outcome.exc)
            self._followups(job, "failure")
            return
        _end(job, JobStatus.FINISHED, result=outcome.result)
        self._followups(job, "success")
        if job.next_stage is not None:
            self._runner_of(outcome.next_stage).perform(job.next_stage)

    def _blocked(self, job: EagerJob) -> Optional[str]:
        """Why a job with parents may not run (its parents have all ended: eager)."""
        for parent_id in job.depends_on:
            parent = _JOBS.get((job.namespace, parent_id))
            ok = parent is not None and parent._fields.get("status") == JobStatus.FINISHED
            if not ok and not job.allows_failure:
                return f"job {parent_id}, which it depends on, did not finish"
        return None

    def _prepare_next(self, job: EagerJob, outcome: Attempt) -> Attempt:
        """Validate the flow's next stage (a refusal fails this stage, as in a worker) and
        link it; it runs once this stage has ended."""
        stage = outcome.next_stage
        kwargs = dict(stage.kwargs)
        options = take_options(kwargs)
        try:
            refuse(
                options, ("depends_on",), "a flow's next stage (it starts when this one completes)"
            )
            runner = self._runner_of(stage)
            prepared = runner.queue.prepare([(stage.func, tuple(stage.args), kwargs)], options)
            (next_id, _, fields), namespace = prepared[0], runner.queue.keys.namespace
            if (namespace, next_id) in _JOBS:
                raise ValueError(
                    f"Next(..., job_id={next_id!r}): a job with that id already exists; "
                    "the next stage was not enqueued"
                )
        except (TypeError, ValueError) as exc:
            return Attempt(exc=(type(exc).__name__, str(exc), ""))
        links = {"flow_id": job._fields.get("flow_id", job.id), "prev_id": job.id}
        job.next_stage = EagerJob(next_id, runner.queue.keys, {**fields, **links})
        job._fields["next_id"] = next_id
        _remember(job.next_stage)
        return Attempt(result=outcome.result, next_stage=stage)

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
        specs = json.loads(job._fields.get(f"on_{kind}_jobs", "[]"))
        for spec in specs:
            if spec.get("name") not in ("on_success", "on_failure"):
                continue
            fields = {**spec["fields"], "callback_of": job.id, "callback_kind": kind}
            followup = EagerJob(os.urandom(16).hex(), job._keys, fields)
            job.followups.append(followup)
            _remember(followup)
            self.perform(followup, followup_arguments(job, kind))

    # ---- groups (rqconc/queue/groups.py calls Queue.enqueue_group) ----
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


def _remember(job: EagerJob) -> None:
    _JOBS[(job.namespace, job.id)] = job
    while len(_JOBS) > MAX_JOBS:
        _JOBS.popitem(last=False)


def _record_failure(fields: Dict[str, str], exc: Tuple[str, str, str]) -> None:
    fields["exc_type"], fields["exc_message"], fields["traceback"] = exc


def _end(
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
        _record_failure(fields, exc)


__all__ = ["EagerRunner", "eager_mode", "find_job", "forget_jobs"]
