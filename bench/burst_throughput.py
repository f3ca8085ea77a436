"""Throughput of `python main.py BACKEND SIZE --burst` on N queued no-op jobs.

    .venv/bin/python bench/burst_throughput.py [--backend forking] [--size 2] [--jobs 10000]
        [--runs 3] [--task noop|sleep10|asleep10]

    e.g. the asyncio backend on `async def` 10 ms jobs (SPEC 13):
    .venv/bin/python bench/burst_throughput.py --backend asyncio --size 200 --jobs 20000 \
        --task asleep10

Starts a private redis-server, enqueues the jobs (enqueue_many), times the worker from
its start to its exit, and prints each run and the median.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rqconc import Queue  # noqa: E402


def start_redis() -> tuple:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    workdir = tempfile.mkdtemp(prefix="rqconc-bench-")
    process = subprocess.Popen(
        [
            shutil.which("redis-server"),
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
        ],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(200):
        try:
            client.ping()
            return process, url
        except redis.ConnectionError:
            time.sleep(0.02)
    raise RuntimeError("redis-server did not start")


def one_run(url: str, backend: str, size: int, jobs: int, task: str = "noop") -> float:
    client = redis.Redis.from_url(url)
    client.flushall()
    queue = Queue("bench", connection=url)
    for start in range(0, jobs, 1000):
        queue.enqueue_many([(f"bench.tasks:{task}", ())] * min(1000, jobs - start), result_ttl=0)
    env = dict(os.environ, BENCH_REDIS_URL=url)
    began = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "main.py"),
            backend,
            str(size),
            "--burst",
            "--url",
            url,
            "-q",
            "bench",
            "--allow",
            "bench",
            "--log-level",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
        check=True,
    )
    elapsed = time.perf_counter() - began
    done = int(client.get("bench:done") or 0)
    if done != jobs:
        raise RuntimeError(f"{done} of {jobs} jobs ran")
    return jobs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="forking")
    parser.add_argument("--size", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--task", default="noop", choices=["noop", "sleep10", "asleep10"])
    args = parser.parse_args()
    process, url = start_redis()
    try:
        version = redis.Redis.from_url(url).info("server")["redis_version"]
        print(
            f"machine: {platform.node()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, Redis {version}"
        )
        rates = []
        for run in range(args.runs):
            rate = one_run(url, args.backend, args.size, args.jobs, args.task)
            rates.append(rate)
            print(
                f"run {run + 1}: {args.jobs} {args.task} jobs, {args.backend} {args.size}: "
                f"{rate:,.0f} jobs/s (worker start to exit)"
            )
        print(f"median of {args.runs}: {statistics.median(rates):,.0f} jobs/s")
    finally:
        process.terminate()
        process.wait(5)


if __name__ == "__main__":
    main()
