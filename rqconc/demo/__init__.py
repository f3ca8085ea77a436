"""`--demo N`: fill a queue with N demo jobs, show live progress, print a summary."""

from __future__ import annotations

import random
import statistics
import sys
import time
from typing import Any, Dict, List

from rqconc.connection.clients import connect, describe, resolve_url
from rqconc.queue.job import Job
from rqconc.queue.queue import Queue
from rqconc.queue.retry import Retry
from rqconc.worker.supervisor import Supervisor

STATE_MARK = {"idle": ".", "busy": "#", "starting": "~", "ending": "x", "exited": "x"}
DEMO_QUEUE = "demo"


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


def _enqueue(url: str, count: int) -> List[str]:
    queue = Queue(DEMO_QUEUE, connection=url)
    queue.empty()
    job_ids = []
    for priority in (2, 1, 0):  # three priorities; enqueue_many takes one option set
        batch = [(func, args) for func, args, p in _calls(count) if p == priority]
        if batch:
            jobs = queue.enqueue_many(batch, priority=priority, retry=Retry(max=0))
            job_ids += [job.id for job in jobs]
    return job_ids


def _summary(url: str, job_ids: List[str], elapsed: float, backend: str, size: int) -> str:
    jobs = [job for job in Job.fetch_many(job_ids, url) if job is not None]
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


def run_demo(backend: str, size: int, options: Dict[str, Any]) -> int:
    url = resolve_url(options.get("url"))
    count = options["demo"]
    print(f"Redis: {describe(connect(url))}")
    job_ids = _enqueue(url, count)
    began = time.monotonic()

    queue = Queue(DEMO_QUEUE, connection=url)

    def show(sup: Any) -> None:
        children = sup.children
        busy = sum(c.state == "busy" for c in children)
        done = count - queue.count - busy
        marks = "".join(STATE_MARK.get(c.state, "?") for c in children)
        rate = done / max(time.monotonic() - began, 1e-6)
        sys.stdout.write(f"\r{done:>8}/{count} done  children [{marks}]  {rate:7.0f} jobs/s ")
        sys.stdout.flush()

    sup = Supervisor(
        backend,
        size,
        [DEMO_QUEUE],
        connection=url,
        burst=True,
        on_tick=show,
        name=options.get("name"),
    )
    code = sup.run()
    print("\n" + _summary(url, job_ids, time.monotonic() - began, backend, size))
    return code
