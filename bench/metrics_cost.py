"""What the metrics counters and richer events cost a no-op job (SPEC 13: at most 5%).

    .venv/bin/python bench/metrics_cost.py [--base main] [--head HEAD] [--rounds 5]
                                           [--jobs 20000] [--steps-only]
(--head . : the working tree as it is)

Checks both revisions out into temporary worktrees and, alternating round by round on one
private Redis, drains N queued no-op jobs with `main.py forking 2` of each tree. Per round
it records the throughput between the 500th and the last job, Redis' CPU per job (psutil,
user + system of redis-server) and the Redis CPU of the Lua steps per job (INFO
commandstats, evalsha); then, alone, the Redis CPU of one fused complete-and-take step
(STEPS_LOOP). On a shared, loaded machine throughput swings by 2x from run to
run; Redis' CPU per job is what the counters add to, and it moves much less.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import psutil
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import COUNTER, ROOT, PrivateRedis, kill_group, worker_env  # noqa: E402


def fill(tree: Path, url: str, n: int) -> None:
    """N no-op jobs (result_ttl=0), enqueued by the tree's own code."""
    code = (
        "import sys\nfrom rqconc import Queue\n"
        f"q = Queue('bench', connection={url!r})\n"
        f"for s in range(0, {n}, 1000):\n"
        f"    q.enqueue_many([('bench.tasks:noop', ())] * min(1000, {n} - s), result_ttl=0)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=str(tree), check=True)


# The steps alone, serially in one process: enqueue N jobs, then N fused complete-and-take
# steps, as a worker's child makes them (no task, no worker): Redis' CPU per job of those
# steps (INFO commandstats, evalsha), what the counters and events add to.
STEPS_LOOP = """
import sys, psutil, redis
from rqconc import Queue
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import Steps
url, n, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
client = redis.Redis.from_url(url)
client.flushall()
q = Queue("bench", connection=url)
for s in range(0, n, 1000):
    q.enqueue_many([("bench.tasks:noop", ())] * min(1000, n - s), result_ttl=0)
steps = Steps(client, KeySpace())
job_id, _ = steps.take("c0", ["bench"], 30000, "w")
server = psutil.Process(pid)
client.config_resetstat()
cpu0 = sum(server.cpu_times()[:2])
for i in range(1, n):
    _, taken = steps.complete("c%d" % (i - 1), job_id, "bench", "null", "json", "w",
                              next_take=("c%d" % i, ["bench"], 30000))
    job_id = taken[0]
cpu1 = sum(server.cpu_times()[:2])
stats = client.info("commandstats")
calls = sum(v["calls"] for k, v in stats.items() if k != "cmdstat_evalsha")
print(stats["cmdstat_evalsha"]["usec"] / (n - 1), (cpu1 - cpu0) / (n - 1) * 1e6, calls / (n - 1))
"""


def steps_usec(tree: Path, server: PrivateRedis, jobs: int) -> Dict[str, float]:
    """One fused complete-and-take step of `tree`'s code: its time in Lua (commandstats,
    wall time inside Redis: a busy machine inflates it), redis-server's CPU time per step
    (request handling included) and the commands its script calls."""
    assert server.process is not None
    argv = [sys.executable, "-c", STEPS_LOOP, server.url, str(jobs), str(server.process.pid)]
    out = subprocess.run(argv, cwd=str(tree), check=True, capture_output=True, text=True)
    lua, cpu, calls = (float(v) for v in out.stdout.split())
    return {"step Lua us": lua, "step redis CPU us": cpu, "step commands": calls}


def evalsha_usec(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("usec", 0))


def _cpu(procs: List[psutil.Process]) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in procs)


def one_round(tree: Path, server: PrivateRedis, jobs: int) -> Dict[str, float]:
    client = redis.Redis.from_url(server.url)
    client.flushall()
    fill(tree, server.url, jobs)
    client.config_resetstat()
    argv = [sys.executable, "main.py", "forking", "2", "-q", "bench", "--url", server.url]
    argv += ["--allow", "bench", "--log-level", "WARNING", "--burst"]
    worker = subprocess.Popen(
        argv, cwd=str(tree), env=worker_env(server.url), start_new_session=True
    )
    redis_proc = psutil.Process(server.process.pid)
    try:
        while int(client.get(COUNTER) or 0) < 500:
            time.sleep(0.002)
        # The supervisor and its children, up by now: their CPU and Redis' is what a job
        # costs the machine, whatever else runs on it (wall time is not, on a busy one).
        procs = [redis_proc, psutil.Process(worker.pid)]
        procs += procs[1].children(recursive=True)
        cpu0, all0, usec0 = _cpu([redis_proc]), _cpu(procs), evalsha_usec(client)
        count0, t0 = int(client.get(COUNTER) or 0), time.perf_counter()
        while int(client.get(COUNTER) or 0) < jobs:
            time.sleep(0.005)
        count1, t1 = int(client.get(COUNTER) or 0), time.perf_counter()
        cpu1, all1, usec1 = _cpu([redis_proc]), _cpu(procs), evalsha_usec(client)
    finally:
        worker.wait(30)
        kill_group(worker.pid)
    done = count1 - count0
    return {
        "jobs/s": done / (t1 - t0),
        "redis CPU us/job": (cpu1 - cpu0) / done * 1e6,
        "all CPU us/job": (all1 - all0) / done * 1e6,
        "Lua us/job": (usec1 - usec0) / done,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="main")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--steps-only", action="store_true", help="only the serial step loop")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="rqconc-metrics-cost-"))
    trees = {side: scratch / side for side in ("base", "head")}
    for side, rev in (("base", args.base), ("head", args.head)):
        if rev == ".":  # the working tree itself, uncommitted edits included
            trees[side] = ROOT
            continue
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(trees[side]), rev],
            check=True,
        )
    server = PrivateRedis().start()
    results: Dict[str, List[Dict[str, float]]] = {"base": [], "head": []}
    try:
        for _ in range(args.rounds):
            for side in ("base", "head"):
                row = {} if args.steps_only else one_round(trees[side], server, args.jobs)
                row.update(steps_usec(trees[side], server, args.jobs))
                results[side].append(row)
    finally:
        server.stop()
        for tree in (t for t in trees.values() if t != ROOT):
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)])
    print(
        f"{args.base} (base) against {args.head} (head), forking 2, {args.jobs} no-op jobs, "
        f"{args.rounds} rounds each, medians"
    )
    for measure in results["base"][0]:
        base = statistics.median(r[measure] for r in results["base"])
        head = statistics.median(r[measure] for r in results["head"])
        low = min(r[measure] for r in results["base"]), min(r[measure] for r in results["head"])
        print(
            f"  {measure:18} base {base:9,.1f}  head {head:9,.1f}  head/base {head / base:.3f}"
            f"  (lowest: base {low[0]:,.1f} head {low[1]:,.1f})"
        )
        for side in ("base", "head"):
            print(f"  {'':18} {side} runs {[round(r[measure], 1) for r in results[side]]}")


if __name__ == "__main__":
    main()
