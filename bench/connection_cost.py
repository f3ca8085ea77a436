"""What one round trip costs the client: a plain redis-py call against rqconc's
DirectConnection (the path of a child's take/complete and of Queue.enqueue), and a whole
single `Queue.enqueue` on each path.

    .venv/bin/python bench/connection_cost.py [--calls 20000] [--runs 5]

A private redis-server; each row is the median of --runs runs, each of --calls calls in a
loop: calls/s and the client's CPU per call (user + system, so the socket syscalls count).
Rows of one run alternate, so a machine that speeds up or slows down meanwhile hits all alike.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import PrivateRedis  # noqa: E402
from rqconc import Queue  # noqa: E402
from rqconc.connection.direct import DirectConnection  # noqa: E402
from rqconc.store.steps.core import Steps  # noqa: E402


def timed(call: Callable[[], object], calls: int) -> Tuple[float, float]:
    began, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        call()
    wall, used = time.perf_counter() - began, time.process_time() - cpu
    return calls / wall, used / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    server = PrivateRedis().start()
    try:
        client = redis.Redis.from_url(server.url)
        direct = DirectConnection(redis.Redis.from_url(server.url))
        fast = Queue("cost", connection=redis.Redis.from_url(server.url))
        plain = Queue("cost", connection=redis.Redis.from_url(server.url))
        # The enqueue step through redis-py's own evalsha on its pool, as a Queue built on
        # anything but a plain redis.Redis still sends it (pooled_connection.py).
        plain._steps = Steps(redis.Redis.from_url(server.url), plain.keys)
        rows: Dict[str, Callable[[], object]] = {
            "INCR, redis-py client": lambda: client.incr("cost:n"),
            "INCR, DirectConnection": lambda: direct.execute("INCR", "cost:n"),
            "Queue.enqueue, redis-py evalsha": lambda: plain.enqueue(
                "bench.tasks:noop", result_ttl=0
            ),
            "Queue.enqueue (PooledConnection)": lambda: fast.enqueue(
                "bench.tasks:noop", result_ttl=0
            ),
        }
        for call in rows.values():
            call()  # connect and load the script outside the clock
        results: Dict[str, List[Tuple[float, float]]] = {name: [] for name in rows}
        for _ in range(args.runs):
            client.flushall()
            for name, call in rows.items():
                results[name].append(timed(call, args.calls))
    finally:
        server.stop()
    print(
        f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, redis-py {redis.__version__}; "
        f"{args.calls:,} calls x {args.runs} runs, medians"
    )
    print(f"| {'path':34} | calls/s | client CPU per call (us) |")
    print(f"| {'-' * 34} | ---: | ---: |")
    for name, runs in results.items():
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"| {name:34} | {rate:,.0f} | {cpu:.1f} |")


if __name__ == "__main__":
    main()
