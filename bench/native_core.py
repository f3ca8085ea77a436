"""The asyncio backend's native core (SPEC 15) against an earlier revision, in one run.

    .venv/bin/python bench/native_core.py [--base main] [--runs 3] [--jobs 5000]
        [--mode asyncio:200 | forking:2:100]

`asyncio 200` serving JOBS `async def` jobs of `await asyncio.sleep(0.01)` plus one INCR
(bench.tasks:asleep10), alternating run by run between BASE (checked out into a temporary
worktree) and this tree, on one private Redis: both see the same machine load, so the ratio
of their medians is the figure to read. Per run: jobs/s between the 500th completion and
the last, and the worker's CPU time (user + system, psutil) per job over the same window,
less sensitive to the load than the rate.

Also per run, `bare`: 200 tasks of one asyncio loop doing the task's own work (the sleep
and the INCR) with no queue at all, the ceiling of any one-loop design in those minutes. On
a loaded machine one loop thread gets about its fair share of a core (2 cores / load), while
a design with a thread per slot gets more: read the rates with that ceiling beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

import psutil
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, PrivateRedis, kill_group, revision_tree, worker_env  # noqa: E402

TASK = "bench.tasks:asleep10"
SKIP = 500  # completions before the window opens (start-up, first connections)


def fill(url: str, jobs: int) -> None:
    from rqconc import Queue

    queue = Queue("bench", connection=url)
    for start in range(0, jobs, 1000):
        queue.enqueue_many([(TASK, ())] * min(1000, jobs - start), result_ttl=0)


def cpu_of(process: psutil.Process) -> float:
    """CPU time of the process and its children (the children of a forking worker)."""
    total = 0.0
    try:
        for each in [process, *process.children(recursive=True)]:
            times = each.cpu_times()
            total += times.user + times.system
    except psutil.Error:
        pass
    return total


def one_run(tree: Path, url: str, jobs: int, mode: str) -> Tuple[float, float]:
    """(jobs/s, CPU us per job of the worker's process tree) of one run of `tree`'s worker;
    `mode`: BACKEND:SIZE[:SLOTS]."""
    client = redis.Redis.from_url(url)
    client.flushall()
    fill(url, jobs)
    backend, size, *slots = mode.split(":")
    command = [sys.executable, "main.py", backend, size, "--url", url, "--allow", "bench"]
    command += ["-q", "bench", *(["--slots", slots[0]] if slots else [])]
    env = worker_env(url, {"PYTHONPATH": str(tree)})
    worker = subprocess.Popen(
        command, cwd=tree, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    process = psutil.Process(worker.pid)
    try:
        deadline = time.monotonic() + 600
        opened: Tuple[float, int, float] = (0.0, 0, 0.0)
        while time.monotonic() < deadline:
            done = int(client.get("bench:done") or 0)
            if not opened[0] and done >= SKIP:
                opened = (time.perf_counter(), done, cpu_of(process))
            if done >= jobs:
                closed = (time.perf_counter(), done, cpu_of(process))
                break
            time.sleep(0.005)
        else:
            raise SystemExit(f"{tree}: not done in time")
    finally:
        kill_group(worker.pid)
        worker.wait()
    count = closed[1] - opened[1]
    return count / (closed[0] - opened[0]), (closed[2] - opened[2]) / count * 1e6


def bare_loop(url: str, jobs: int) -> Tuple[float, float]:
    """(iterations/s, CPU us per iteration) of 200 tasks doing asleep10's work, no queue."""
    import asyncio

    import redis.asyncio

    async def run() -> Tuple[float, float]:
        client = redis.asyncio.Redis.from_url(url, max_connections=10_000)
        done = 0

        async def task() -> None:
            nonlocal done
            while done < jobs:
                await asyncio.sleep(0.01)
                await client.incr("bench:bare")
                done += 1

        wall, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*[task() for _ in range(200)])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        await client.aclose() if hasattr(client, "aclose") else await client.close()
        return done / wall, cpu / done * 1e6

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="main")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--mode", default="asyncio:200")
    options = parser.parse_args()
    server = PrivateRedis().start()
    results: Dict[str, List[Tuple[float, float]]] = {"base": [], "head": [], "bare": []}
    try:
        with revision_tree(options.base) as base:
            for run in range(options.runs):
                for side, tree in (("base", base), ("head", ROOT)):
                    rate, cpu = one_run(tree, server.url, options.jobs, options.mode)
                    results[side].append((rate, cpu))
                    print(f"run {run + 1} {side}: {rate:,.0f} jobs/s, {cpu:,.0f} us CPU/job")
                rate, cpu = bare_loop(server.url, options.jobs)
                results["bare"].append((rate, cpu))
                print(f"run {run + 1} bare loop: {rate:,.0f} /s, {cpu:,.0f} us CPU each")
    finally:
        server.stop()
    rates = {side: statistics.median(r for r, _ in runs) for side, runs in results.items()}
    cpus = {side: statistics.median(c for _, c in runs) for side, runs in results.items()}
    print(
        f"median: base {rates['base']:,.0f} jobs/s {cpus['base']:,.0f} us/job; "
        f"head {rates['head']:,.0f} jobs/s {cpus['head']:,.0f} us/job; "
        f"rate ratio {rates['head'] / rates['base']:.2f}, "
        f"CPU per job ratio {cpus['head'] / cpus['base']:.2f}; "
        f"bare loop {rates['bare']:,.0f} /s {cpus['bare']:,.0f} us each"
    )
    os.environ.pop("BENCH_REDIS_URL", None)


if __name__ == "__main__":
    main()
