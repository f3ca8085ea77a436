"""The chaos audit: every job accounted for, and every repeated run traced to a fault.

Each run of a job left `"<pid> <time>"` on the recording Redis (tests/chaos/jobs.py; the pid
is the child's for forking and multiprocessing, the supervisor's for threading, gevent and asyncio).
SPEC section 3: a job runs again only if its worker vanished mid-run. So every run of a job
but its last must be matched by a fault from the driver's log (tests/chaos/harness.py):
- its process was killed or cold-stopped while the run was underway (kill_child,
  kill_supervisor, cold_shutdown: the victims' pids), or
- its worker was cut off from Redis long enough to lose the lease (redis_restart,
  proxy_drop, proxy_stall: the time window) before the run's outcome could be recorded.
rqconc's own counters (attempts, lost, `interrupted` events) must agree besides.

Two faults explain no repeated run at all (EXPLAIN_NOTHING):
- reply_cut: every request it cut reached Redis and ran; only its reply was lost, and the
  connection was reopened at once. A worker that cannot know whether a step landed must act
  so that the job still runs once: a take whose reply was lost leaves an orphaned claim,
  put back unrun (or, never renewed, recovered after its lease: one run, later); a
  completion resent finds its claim spent and is dropped, not re-run; a renewal whose reply
  was lost did renew; an enqueue resent with its id stores nothing new. A cut may delay a
  run's recording (a resend after a backoff), so it pushes back when the run settles, but a
  repeated run during or after one is matched to another fault or to none (a failure).
- clock_skew: a warm restart with a wrong wall clock; leases, deadlines and recovery are on
  Redis' clock, so no worker's clock may cost or take a lease.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from tests.chaos.harness import (
    ENDED,
    EXPLAIN_NOTHING,
    FAULTS,
    LEASE_SECONDS,
    QUEUE,
    Chaos,
    FaultRecord,
)

# How long after its start a run's outcome is recorded when nothing stands in its way: the
# job sleeps at most 0.3 s, the rest is slack for a loaded 2-core machine.
SETTLE_SECONDS = 2.5
# A take whose reply a stall held back starts its run just after the stall ends, and the
# re-run of a job another worker recovered at that moment may start first.
START_SLACK = 1.0
# Leases are renewed every LEASE_SECONDS / 3: one renewal can land just before a cut-off and
# the next just after it while another worker recovers expired leases at once, so a cut-off
# from LEASE_SECONDS / 3 on can cost a lease (0.5 s allows for a late renewal tick).
MIN_CUT_SECONDS = LEASE_SECONDS / 4
# A run's outcome that could not be recorded is retried with a backoff capped at 5 s
# (worker/recording.until_recorded): after a cut-off of d s, within about d s.
RECORD_RETRY_CAP = 5.0
# A run whose outcome's reply was cut is recorded again after the resend's backoff.
CUT_RECORD_DELAY = 1.0

Run = Tuple[int, float]  # (pid, start)


@dataclass
class Audit:
    statuses: Counter
    lost: List[str]
    unended: Dict[str, Optional[str]]
    dead: Dict[str, str]
    unexplained_dead: List[str]
    duplicates: Dict[str, dict]
    unexplained_duplicates: List[str]  # rqconc's counters do not pay for the runs
    finished_unrecorded: List[str]
    wrong_results: List[str]
    charged: Counter = field(default_factory=Counter)  # fault number -> repeated runs
    unmatched: Dict[str, List[Run]] = field(default_factory=dict)  # runs no fault explains


def cause_of(faults: Sequence[FaultRecord], pid: int, start: float) -> Optional[FaultRecord]:
    """The fault that can have made a run (by `pid`, started at `start`) happen again: a kill
    or cold stop of its process while it ran, else the first cut-off from Redis long enough to
    cost its lease before its outcome was recorded. A cut-off delays that recording, so a
    fault soon after it can still catch the run."""
    settled = start + SETTLE_SECONDS
    cut = None
    for fault in faults:  # in the order injected
        if not fault.hit or fault.ended < start - START_SLACK:
            continue
        if fault.began > settled:
            break
        if fault.kind in EXPLAIN_NOTHING:
            if fault.cutting is not None:
                settled = max(settled, fault.cutting[1] + CUT_RECORD_DELAY)
            continue
        if fault.window is not None:
            began, ended = fault.window
            if cut is None and ended - began >= MIN_CUT_SECONDS:
                cut = fault
            settled = max(settled, ended + min(RECORD_RETRY_CAP, ended - began + 0.5))
        elif pid in fault.victims and fault.ended >= start:
            return fault  # its own process went: certain, where a cut-off is only possible
    return cut


def _runs(entries: List[bytes]) -> List[Run]:
    runs = []
    for entry in entries:
        pid, start = entry.split()
        runs.append((int(pid), float(start)))
    return sorted(runs, key=lambda run: run[1])


def audit(chaos: Chaos, statuses: Dict[str, Optional[str]]) -> Audit:
    """Check the record against Redis and the fault log: every job accounted for, every
    repeated run matched to a fault."""
    direct, keys = chaos.direct, chaos.keys
    pipe = direct.pipeline(transaction=False)
    for job_id in chaos.ids:
        pipe.hmget(keys.job(job_id), ["attempts", "lost", "exc_type", "exc_message", "result"])
    fields = dict(zip(chaos.ids, pipe.execute()))
    rpipe = chaos.record.pipeline(transaction=False)
    for job_id in chaos.ids:
        rpipe.lrange(f"executions:{chaos.tokens[job_id]}", 0, -1)
    executions = dict(zip(chaos.ids, rpipe.execute()))
    dead_letters = {i.decode() for i in direct.zrange(keys.failed(QUEUE), 0, -1)}
    chaos.events.stopping.set()
    chaos.events.join(30)

    result = Audit(Counter(statuses.values()), [], {}, {}, [], {}, [], [], [])
    for job_id in chaos.ids:
        status = statuses.get(job_id)
        attempts, lost, exc_type, exc_message, value = fields[job_id]
        if status is None:
            result.lost.append(job_id)
            continue
        if status not in ENDED:
            result.unended[job_id] = status
        runs = _runs(executions[job_id])
        if status == "finished":
            if not runs:
                result.finished_unrecorded.append(job_id)
            if value is None or chaos.tokens[job_id] not in value.decode(errors="replace"):
                result.wrong_results.append(job_id)
        if status == "failed":
            reason = f"{(exc_type or b'').decode()}: {(exc_message or b'').decode()}"
            result.dead[job_id] = reason
            # The only reason this job may fail: its worker vanished too often.
            if job_id not in dead_letters or "WorkerLost" not in reason:
                result.unexplained_dead.append(job_id)
        if len(runs) > 1:
            _check_repeats(chaos, result, job_id, runs, status, int(attempts or 0), int(lost or 0))
    return result


def _check_repeats(
    chaos: Chaos, result: Audit, job_id: str, runs: List[Run], status: str, attempts: int, lost: int
) -> None:
    interrupted = chaos.events.counts[job_id]["interrupted"]
    causes = [cause_of(chaos.faults, pid, start) for pid, start in runs[:-1]]
    result.duplicates[job_id] = {
        "runs": len(runs),
        "attempts": attempts,
        "lost": lost,
        "interrupted": interrupted,
        "status": status,
        "starts": [start for _, start in runs],
        "causes": [f"#{c.number} {c.kind}" if c else "none" for c in causes],
    }
    for cause in causes:
        if cause is not None:
            result.charged[cause.number] += 1
    unmatched = [run for run, cause in zip(runs, causes) if cause is None]
    if unmatched:
        result.unmatched[job_id] = unmatched
    # Each execution beyond the first must also be paid for in rqconc's own counters: an
    # ended attempt (a child lost mid-job, a lease lost with its worker) or a cold-shutdown
    # interruption.
    if len(runs) > attempts + interrupted or (attempts <= 1 and lost == 0 and interrupted == 0):
        result.unexplained_duplicates.append(job_id)


def fault_table(chaos: Chaos, result: Audit) -> str:
    """Markdown: per fault kind, how often it hit, the repeated runs matched to it, recovery
    median/max; then the overall figures."""
    hits: Dict[str, List[FaultRecord]] = defaultdict(list)
    charged: Counter = Counter()
    for record in chaos.faults:
        charged[record.kind] += result.charged[record.number]
        if record.hit:
            hits[record.kind].append(record)
    lines = [
        "| fault | injected | duplicate runs | recovery median | recovery max |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind in FAULTS:
        times = [r.recovery for r in hits[kind] if r.recovery is not None]
        median = f"{statistics.median(times):.2f} s" if times else "-"
        worst = f"{max(times):.2f} s" if times else "-"
        lines.append(f"| {kind} | {len(hits[kind])} | {charged[kind]} | {median} | {worst} |")
    unmatched = sum(len(runs) for runs in result.unmatched.values())
    if unmatched:
        lines.append(f"| (no fault) | - | {unmatched} | - | - |")
    dup_runs = sum(d["runs"] - 1 for d in result.duplicates.values())
    cut_steps: Counter = Counter()
    for record in chaos.faults:
        cut_steps.update(record.cut_steps)
    steps = ", ".join(f"{name} {n}" for name, n in cut_steps.most_common())
    missed = len(chaos.faults) - sum(len(records) for records in hits.values())
    lines += [
        "",
        f"Jobs: {len(chaos.ids)} enqueued; statuses {dict(result.statuses)}; "
        f"lost {len(result.lost)}; dead letters {len(result.dead)}.",
        f"Duplicate executions: {dup_runs} extra runs over {len(result.duplicates)} jobs; "
        f"each earlier run matched to a fault in the log: {dup_runs - unmatched}, unmatched: "
        f"{unmatched}; jobs whose runs rqconc's counters (attempts, lost, interrupted) do "
        f"not pay for: {len(result.unexplained_duplicates)}."
        + (f" Faults that hit nothing (not counted): {missed}." if missed else ""),
        f"Replies cut: {sum(cut_steps.values())} ({steps or 'none'}).",
    ]
    return "\n".join(lines)


def duplicate_breakdown(chaos: Chaos, result: Audit) -> str:
    """One line per fault that repeated runs were matched to, and per unmatched run."""
    lines = []
    for record in chaos.faults:
        if result.charged[record.number]:
            lines.append(
                f"fault {record.number:3d} {record.kind:16s} "
                f"{result.charged[record.number]:3d} repeated runs ({record.note})"
            )
    for job_id, runs in sorted(result.unmatched.items()):
        for pid, start in runs:
            lines.append(
                f"UNMATCHED {job_id}: run by pid {pid} at {start:.3f} ({result.duplicates[job_id]})"
            )
    return "\n".join(lines) or "no repeated runs"
