"""The physical limit of SPEC section 5: a no-op loop with no framework at all.

    .venv/bin/python bench/bare_loop.py [--processes 2] [--jobs 20000] [--runs 3]

Each of N processes repeats what any Redis queue must do per job, and nothing else: one Lua
step that marks its previous job finished and pops the next (a job hash and a zset, as
rqconc keeps them), then the task's `INCR bench:done`, both through redis-py with hiredis.
No leases, events, fencing, results, retries or supervision. rqconc's `forking 2` row
divided by this is how much of the machine the framework leaves to jobs; a peer cannot
beat it either, so a target above it cannot be met on this machine.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import COUNTER, PrivateRedis  # noqa: E402

QUEUE = "bare:q"
# KEYS[1] the queue zset; ARGV[1] the id just run ("" on the first call).
STEP = """
if ARGV[1] ~= '' then redis.call('HSET', 'bare:job:' .. ARGV[1], 'status', 'finished') end
local popped = redis.call('ZPOPMIN', KEYS[1])
if #popped == 0 then return false end
redis.call('HSET', 'bare:job:' .. popped[1], 'status', 'started')
return popped[1]
"""


def fill(client: redis.Redis, jobs: int) -> None:
    pipe = client.pipeline(transaction=False)
    for n in range(jobs):
        job_id = f"{n:08d}"
        pipe.hset(f"bare:job:{job_id}", mapping={"func": "bench.tasks:noop", "status": "queued"})
        pipe.zadd(QUEUE, {job_id: n})
        if n % 1000 == 999:
            pipe.execute()
    pipe.execute()


def work(url: str, sha: str) -> None:
    client = redis.Redis.from_url(url)
    previous = ""
    while True:
        taken = client.evalsha(sha, 1, QUEUE, previous)
        if taken is None:
            return
        client.incr(COUNTER)  # the task
        previous = taken.decode()


def one_run(url: str, processes: int, jobs: int) -> float:
    client = redis.Redis.from_url(url)
    client.flushall()
    fill(client, jobs)
    sha = client.script_load(STEP)
    workers = [multiprocessing.Process(target=work, args=(url, sha)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    # Timed as bench/run.py times every system: from the first completion seen to the last.
    while int(client.get(COUNTER) or 0) == 0:
        time.sleep(0.001)
    began, first = time.perf_counter(), int(client.get(COUNTER))
    while int(client.get(COUNTER) or 0) < jobs:
        time.sleep(0.002)
    elapsed = time.perf_counter() - began
    for worker in workers:
        worker.join()
    return (jobs - first) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    server = PrivateRedis().start()
    try:
        rates = [one_run(server.url, args.processes, args.jobs) for _ in range(args.runs)]
        version = server.version()
    finally:
        server.stop()
    print(
        f"bare loop, {args.processes} processes, {args.jobs:,} no-op jobs, Redis {version}, "
        f"{os.cpu_count()} cores: median {statistics.median(rates):,.0f} jobs/s "
        f"(runs: {', '.join(f'{r:,.0f}' for r in rates)})"
    )


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    main()
