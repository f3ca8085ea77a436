"""`--demo N`: fill a queue with N demo jobs, show live progress, print a summary."""

from __future__ import annotations

import random
import shutil
import statistics
import sys
import time
from typing import Any, Dict, List, Optional

from rqconc.connection.clients import connect, describe, resolve_url
from rqconc.queue.job import Job
from rqconc.queue.queue import Queue
from rqconc.queue.retry import Retry
from rqconc.worker.redis_supervisor import Supervisor

STATE_MARK = {"idle": ".", "busy": "#", "starting": "~", "ending": "x", "exited": "x"}
LEGEND = "children: # busy  . idle  ~ starting  x ending"
DEMO_QUEUE = "demo"
# The demo's failures are deliberate: kept long enough to look at, not the default year.
FAILURE_TTL = 600
PLAIN_EVERY = 1.0  # seconds between progress lines when stdout is not a terminal


def _calls(count: int, seed: int = 4711) -> List[tuple]:
    rng = random.Random(seed)
    calls: List[tuple] = []
    for n in range(count):
        roll = rng.random()
        if roll < 0.05:
            calls.append(("rqconc.demo.tasks:charge_card", (n,), 0))
        elif roll < 0.35:
            calls.append(("rqconc.demo.tasks:render_thumbnail", (rng.randint(2000, 20000),), 1))
        else:
            calls.append(
                (
                    "rqconc.demo.tasks:send_sms",
                    (f"+49{rng.randint(10**8, 10**9)}", "code 4711", rng.uniform(0.001, 0.01)),
                    rng.choice((0, 1, 2)),
                )
            )
    return calls


def _enqueue(url: str, count: int, namespace: str) -> List[str]:
    queue = Queue(DEMO_QUEUE, connection=url, namespace=namespace)
    queue.empty()
    job_ids = []
    for priority in (2, 1, 0):  # three priorities; enqueue_many takes one option set
        batch = [(func, args) for func, args, p in _calls(count) if p == priority]
        if batch:
            jobs = queue.enqueue_many(
                batch, priority=priority, retry=Retry(max=0), failure_ttl=FAILURE_TTL
            )
            job_ids += [job.id for job in jobs]
    return job_ids


def _marks(states: List[str], room: int) -> str:
    """One mark per child, or counts per mark when that would not fit in `room` columns."""
    if not states:
        return "ended"
    marks = "".join(STATE_MARK.get(state, "?") for state in states)
    if len(marks) + 2 <= room:
        return f"[{marks}]"
    counts = {mark: marks.count(mark) for mark in dict.fromkeys(STATE_MARK.values())}
    return " ".join(f"{n}{mark}" for mark, n in counts.items() if n)


def progress_line(done: int, count: int, states: List[str], rate: float, width: int) -> str:
    """The live line, never wider than `width` (a wrapped line breaks the redraw)."""
    head, tail = f"{done:>8}/{count} done  children ", f"  {rate:7.0f} jobs/s"
    return (head + _marks(states, width - len(head) - len(tail) - 1) + tail)[: width - 1]


def _summary(
    url: str, job_ids: List[str], elapsed: float, backend: str, size: int, namespace: str
) -> str:
    jobs = [job for job in Job.fetch_many(job_ids, url, namespace) if job is not None]
    rows = [
        (job.field("status"), job.field("enqueued_at"), job.field("started_at")) for job in jobs
    ]
    finished = sum(1 for row in rows if row[0] == "finished")
    failed = sum(1 for row in rows if row[0] == "failed")
    waits = sorted(float(s) - float(e) for _, e, s in rows if e and s)  # stored in ms
    pct = (lambda p: waits[min(len(waits) - 1, int(p * len(waits)))]) if waits else None
    lines = [
        f"{len(job_ids)} demo jobs on {size} {backend} children in {elapsed:.2f} s: "
        f"{(finished + failed) / elapsed:.0f} jobs/s",
        f"finished {finished}, failed {failed} (the demo's card payments fail on purpose)",
    ]
    if pct:
        lines.append(
            f"time in the queue: median {statistics.median(waits):.0f}"
            f" ms, p90 {pct(0.9):.0f} ms, p99 {pct(0.99):.0f} ms"
        )
    return "\n".join(lines)


class Progress:
    """The live display: redrawn in place on a terminal, else a plain line every second."""

    def __init__(self, count: int, url: str, namespace: str = "rqconc") -> None:
        self.count = count
        self.queue = Queue(DEMO_QUEUE, connection=url, namespace=namespace)
        self.began = time.monotonic()
        self.done_at: Optional[float] = None  # when the last job was seen done
        self.tty = sys.stdout.isatty()
        self.printed = 0.0

    def elapsed(self) -> float:
        return (self.done_at or time.monotonic()) - self.began

    def show(self, sup: Any, final: bool = False) -> None:
        states = [child.state for child in sup.children]
        done = self.count - self.queue.count - states.count("busy")
        if done >= self.count and self.done_at is None:
            self.done_at = time.monotonic()
        now = time.monotonic()
        if not (self.tty or final or now - self.printed >= PLAIN_EVERY):
            return
        self.printed = now
        width = shutil.get_terminal_size().columns
        line = progress_line(done, self.count, states, done / max(self.elapsed(), 1e-6), width)
        sys.stdout.write(f"\r{line}" if self.tty else f"{line}\n")
        sys.stdout.flush()


def run_demo(backend: str, size: int, options: Dict[str, Any]) -> int:
    url = resolve_url(options.get("url"))
    count = options["demo"]
    print(f"Redis: {describe(connect(url))}")
    print(LEGEND)
    namespace = options.get("namespace") or "rqconc"  # one (the command line checks)
    job_ids = _enqueue(url, count, namespace)
    progress = Progress(count, url, namespace)
    sup = Supervisor(
        backend,
        size,
        [DEMO_QUEUE],
        connection=url,
        namespace=namespace,
        burst=True,
        on_tick=progress.show,
        name=options.get("name"),
    )
    code = sup.run()
    progress.show(sup, final=True)  # the last line's rate is the summary's
    ending = "\n" if progress.tty else ""
    print(ending + _summary(url, job_ids, progress.elapsed(), backend, size, namespace))
    return code
