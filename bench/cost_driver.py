"""Redis CPU per job of one system, run by that system's Python (rqconc's .venv or
bench/.peers-venv); prints one JSON object as its last line. bench/redis_cost.py runs it.

    python -m bench.cost_driver SYSTEM --url URL --mode MODE [--jobs N] [--singles N]

Three phases, each between two snapshots of the server's `INFO cpu` (used_cpu_user +
used_cpu_sys of redis-server) and `INFO commandstats` (reset with CONFIG RESETSTAT):

  enqueue_single  N single enqueue calls (the system's plain API);
  enqueue_batch   N jobs through the system's batch API (or its fastest way to queue many);
  run             the workers start and run the N queued jobs: take + complete and whatever
                  the worker does around them (heartbeats, lease renewals, scheduler polls).

The task is `quiet`: it sends Redis nothing and marks its end by appending one byte to a file
($BENCH_DONE_FILE), so every microsecond measured is the queue's own work. The phase ends
when the file holds N bytes; the workers are then killed. `--task aquiet10` (rqconc only) is
SPEC 15's job, `async def` awaiting `asyncio.sleep(0.01)` first, sending Redis nothing either.

CPU time is the server's, in microseconds per job. `commandstats` counts a command run inside
a Lua script both on its own line and in EVALSHA's time: EVALSHA's usec already contains
them, so the table shows the inner commands' calls per job, not a sum of both.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict

import redis

from bench.common import DONE_FILE, Timeout, Workers, worker_env


def cpu_seconds(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def command_stats(client: redis.Redis) -> Dict[str, Dict[str, float]]:
    stats = client.info("commandstats")
    return {
        name[len("cmdstat_") :]: {"calls": float(v["calls"]), "usec": float(v["usec"])}
        for name, v in stats.items()
    }


class Phase:
    """CPU and command counts of the server across one phase, per job."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def __enter__(self) -> Phase:
        self.client.config_resetstat()
        self.cpu = cpu_seconds(self.client)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cpu = cpu_seconds(self.client) - self.cpu
        # The two INFO calls of this measurement are left out of the per-command table.
        self.commands = {
            k: v
            for k, v in command_stats(self.client).items()
            if k not in ("info", "config|resetstat", "config")
        }

    def per_job(self, jobs: int) -> Dict[str, Any]:
        return {
            "cpu_us": self.cpu * 1e6 / jobs,
            "commands": {
                name: {"calls": v["calls"] / jobs, "usec": v["usec"] / jobs}
                for name, v in sorted(self.commands.items(), key=lambda kv: -kv[1]["usec"])
            },
        }


def wait_done(path: Path, jobs: int, deadline: float, workers: Workers) -> None:
    last_check = time.monotonic()
    while not path.exists() or path.stat().st_size < jobs:
        if time.monotonic() > deadline:
            done = path.stat().st_size if path.exists() else 0
            raise Timeout(f"{done} of {jobs} jobs done at the time limit")
        if time.monotonic() - last_check > 0.5:
            workers.check_alive()
            last_check = time.monotonic()
        time.sleep(0.005)  # polling a file costs Redis nothing


def measure(args: argparse.Namespace) -> Dict[str, Any]:
    os.environ["BENCH_REDIS_URL"] = args.url
    done = Path(tempfile.mkdtemp(prefix="rqconc-cost-")) / "done"
    os.environ[DONE_FILE] = str(done)
    peer = importlib.import_module(f"bench.peers.{args.system}")
    client = redis.Redis.from_url(args.url)
    client.flushall()
    task = args.task
    peer.enqueue(task)  # connect, load scripts, warm up: outside every phase
    client.flushall()
    result: Dict[str, Any] = {"system": args.system, "mode": args.mode, "jobs": args.jobs}
    result["task"] = task
    with Phase(client) as single:
        for _ in range(args.singles):
            peer.enqueue(task)
    result["enqueue_single"] = single.per_job(args.singles)
    client.flushall()
    with Phase(client) as batch:
        peer.enqueue_batch(task, args.jobs)
    result["enqueue_batch"] = batch.per_job(args.jobs)
    workers = Workers()
    try:
        with Phase(client) as run:
            for argv in peer.workers(args.mode, sys.executable):
                workers.start(argv, worker_env(args.url, {DONE_FILE: str(done)}))
            wait_done(done, args.jobs, time.monotonic() + args.timeout, workers)
    finally:
        workers.kill()
    if done.stat().st_size != args.jobs:  # a job run twice would make the cost look lower
        raise RuntimeError(f"{done.stat().st_size} completions for {args.jobs} jobs")
    result["run"] = run.per_job(args.jobs)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("system")
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--singles", type=int, default=2_000)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--task", default="quiet", choices=("quiet", "aquiet10"))
    print(json.dumps(measure(parser.parse_args())))


if __name__ == "__main__":
    main()
