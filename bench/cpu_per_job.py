"""CPU per job of any system's workers and of Redis, for one throughput workload: where a
2-core machine's budget goes (bench/RESULTS.md, "SPEC 13: where the time goes").

    .venv/bin/python bench/cpu_per_job.py SYSTEM MODE [--task sleep10] [--jobs 20000]

e.g. `rqconc forking:2:50`, `dramatiq 2:50`, `huey thread:100`. Runs under rqconc's .venv
(psutil); a peer's own code (its fill and its worker command lines) runs under
bench/.peers-venv. FLUSHALL, queue the jobs, start the workers; between the 500th completion
and the last 200, read the CPU time (user + system) of the whole worker process tree
(psutil) and of Redis (`INFO cpu`), and print both per job, with the rate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import psutil
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import COUNTER, ROOT, PrivateRedis, kill_group, worker_env  # noqa: E402

PEERS_PYTHON = str(ROOT / "bench" / ".peers-venv" / "bin" / "python")


def python_of(system: str) -> str:
    return sys.executable if system == "rqconc" else PEERS_PYTHON


def peer_call(system: str, code: str, url: str) -> str:
    """Run `code` with `peer` = bench.peers.SYSTEM under that system's Python."""
    done = subprocess.run(
        [python_of(system), "-c", f"import bench.peers.{system} as peer\n{code}"],
        cwd=str(ROOT),
        env=worker_env(url),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def tree_cpu(pids: List[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for proc in [root, *root.children(recursive=True)]:
                try:
                    total += sum(proc.cpu_times()[:2])
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
    return total


def redis_cpu(client: redis.Redis) -> Tuple[float, float]:
    """Redis' user and system CPU seconds (its own work, and the kernel's for its I/O)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]), float(info["used_cpu_sys"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("system")
    parser.add_argument("mode")
    parser.add_argument("--task", default="sleep10")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument(
        "--commands", action="store_true", help="also print Redis calls per job, by command"
    )
    args = parser.parse_args()
    server = PrivateRedis().start()
    workers: List[subprocess.Popen] = []
    try:
        client = redis.Redis.from_url(server.url)
        client.flushall()
        peer_call(args.system, f"peer.fill({args.task!r}, {args.jobs})", server.url)
        python = python_of(args.system)
        code = f"import json; print(json.dumps(peer.workers({args.mode!r}, {python!r})))"
        for argv in json.loads(peer_call(args.system, code, server.url)):
            workers.append(
                subprocess.Popen(
                    argv,
                    cwd=str(ROOT),
                    env=worker_env(server.url),
                    start_new_session=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        pids = [w.pid for w in workers]
        while int(client.get(COUNTER) or 0) < 500:
            time.sleep(0.002)
        cpu0, redis0 = tree_cpu(pids), redis_cpu(client)
        stats0 = client.info("commandstats")
        count0, t0 = int(client.get(COUNTER) or 0), time.perf_counter()
        while int(client.get(COUNTER) or 0) < args.jobs - 200:
            time.sleep(0.01)
        cpu1, redis1 = tree_cpu(pids), redis_cpu(client)
        stats1 = client.info("commandstats")
        count1, t1 = int(client.get(COUNTER) or 0), time.perf_counter()
    finally:
        for worker in workers:
            kill_group(worker.pid)
        server.stop()
    done = count1 - count0
    user, system = ((b - a) / done * 1e6 for a, b in zip(redis0, redis1))
    print(
        f"{args.system} {args.mode} ({args.task}, {done} jobs): {done / (t1 - t0):,.0f} jobs/s; "
        f"CPU per job: workers {(cpu1 - cpu0) / done * 1e6:.0f} us, "
        f"Redis {user + system:.0f} us (user {user:.0f}, system {system:.0f}); "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    if args.commands:
        for name, after in sorted(stats1.items(), key=lambda kv: -kv[1]["usec"]):
            before = stats0.get(name, {"calls": 0, "usec": 0})
            calls = after["calls"] - before["calls"]
            if calls:
                print(
                    f"  {name.split('_', 1)[1]:24} {calls / done:7.3f} calls/job "
                    f"{(after['usec'] - before['usec']) / done:7.1f} us/job"
                )


if __name__ == "__main__":
    main()
