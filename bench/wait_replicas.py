"""The cost of `wait_replicas=1` (SPEC section 13): jobs/s with and without, in the same run.

    .venv/bin/python bench/wait_replicas.py [--jobs 5000] [--runs 3] [--results]

One master and one replica (redis-server on free loopback ports, no persistence). Each run,
alternating the two settings so that both see the same machine: FLUSHALL; N no-op jobs (one
INCR each, as in every no-op row) are enqueued as single calls with that `wait_replicas`
(enqueue/s); then a `forking 2` worker with `--wait-replicas N` runs them (jobs/s from the 5%
mark to the last, leaving its start-up out). Prints the medians of --runs and the ratio;
`make bench` runs it after bench/run.py, with --results: the table goes into
bench/RESULTS.md between the markers below.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402

from bench.common import ROOT, free_port, kill_group, redis_binary, replace_section  # noqa: E402
from rqconc import Queue  # noqa: E402

BEGIN, END = "<!-- wait-replicas:begin -->", "<!-- wait-replicas:end -->"


def start_server(*extra: str) -> subprocess.Popen:
    port = free_port()
    directory = tempfile.mkdtemp(prefix="rqconc-bench-wait-")
    argv = [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", directory,
            "--save", "", "--appendonly", "no", "--loglevel", "warning", *extra]  # fmt: skip
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True)
    process.port = port  # type: ignore[attr-defined]
    return process


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout} s")
        time.sleep(0.01)


def synced(client: redis.Redis) -> bool:
    try:
        return client.info("replication").get("slave0", {}).get("state") == "online"
    except redis.exceptions.ConnectionError:
        return False


def one_run(url: str, client: redis.Redis, replicas: int, jobs: int) -> Tuple[float, float]:
    """(enqueue/s of single calls, jobs/s run by a forking 2 worker), both with `replicas`."""
    client.flushall()
    queue = Queue("default", url, wait_replicas=replicas)
    queue.enqueue("bench.tasks:noop")  # the connection and the script, loaded before timing
    started = time.monotonic()
    for _ in range(jobs - 1):
        queue.enqueue("bench.tasks:noop")
    enqueue_rate = (jobs - 1) / (time.monotonic() - started)
    env = dict(os.environ, BENCH_REDIS_URL=url)
    argv = [sys.executable, "main.py", "forking", "2", "--url", url, "--allow", "bench",
            "--wait-replicas", str(replicas), "--log-level", "WARNING"]  # fmt: skip
    worker = subprocess.Popen(argv, cwd=ROOT, env=env, start_new_session=True)
    try:
        # Timed from the 5% mark: the workers' start-up is not what is measured.
        first = max(1, jobs // 20)
        wait_until(lambda: int(client.get("bench:done") or 0) >= first, 60, "first jobs")
        started = time.monotonic()
        wait_until(lambda: int(client.get("bench:done") or 0) >= jobs, 120, "finished jobs")
        return enqueue_rate, (jobs - first) / (time.monotonic() - started)
    finally:
        kill_group(worker.pid)
        worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md's table")
    args = parser.parse_args()
    master = start_server()
    replica = start_server("--replicaof", "127.0.0.1", str(master.port))  # type: ignore[attr-defined]
    url = f"redis://127.0.0.1:{master.port}/0"  # type: ignore[attr-defined]
    client = redis.Redis.from_url(url)
    results: Dict[int, List[Tuple[float, float]]] = {0: [], 1: []}
    try:
        wait_until(lambda: synced(client), 30, "replica in sync")
        for _ in range(args.runs):
            for replicas in (0, 1):
                results[replicas].append(one_run(url, client, replicas, args.jobs))
    finally:
        for process in (replica, master):
            kill_group(process.pid)
            process.wait()
    lines = [
        "| | wait_replicas=0 | wait_replicas=1 | ratio | runs (0 / 1) |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for index, what in ((0, "enqueue/s, single calls"), (1, "no-op jobs/s, forking 2")):
        plain, waited = (statistics.median(r[index] for r in results[n]) for n in (0, 1))
        runs = " / ".join(str([round(r[index]) for r in results[n]]) for n in (0, 1))
        lines.append(f"| {what} | {plain:,.0f} | {waited:,.0f} | {waited / plain:.0%} | {runs} |")
    print(f"wait_replicas cost: {args.jobs} no-op jobs, master + 1 replica, median of {args.runs}")
    print("\n".join(lines))
    if args.results:
        intro = (
            f"`bench/wait_replicas.py --runs {args.runs} --jobs {args.jobs}` (`make bench`): "
            "one master and one replica on this machine, the two settings alternating run by "
            "run; medians (no target: SPEC 13 asks for the cost to be reported)."
        )
        text = [BEGIN, "## The cost of `wait_replicas=1`", "", intro, "", *lines, END]
        replace_section(BEGIN, END, "\n".join(text))


if __name__ == "__main__":
    main()
