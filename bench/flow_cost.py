"""What flow control costs the hot path (SPEC 13: at most 5% on the plain no-op job), in
Redis time: the fused complete-and-take step run in a loop by one client, against an
earlier revision, alternating run by run on one private Redis.

    .venv/bin/python bench/flow_cost.py [--base main] [--runs 5] [--jobs 20000]

Per run: N no-op jobs queued, then one take and N completions that each take the next job
in the same step (what a worker child does). Reports Redis' own time per job (`INFO
commandstats`, EVALSHA usec: the step's Lua) and the loop's jobs/s, for the base revision,
the working tree with no limit set, and the working tree with high limits set (never
reached). Redis time is the figure that machine load disturbs least: `compare_revisions.py`
measures whole workers, whose rates swing with what else runs on the 2 cores.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, PrivateRedis  # noqa: E402

# Run in a fresh interpreter whose sys.path starts with the tree under test.
LOOP = """
import json, sys, time
import psutil
import redis
from rqconc import Queue
from rqconc.store.steps.core import Steps

url, jobs, limited = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
server = psutil.Process(int(sys.argv[4]))
client = redis.Redis.from_url(url)
client.flushall()
q = Queue("cost", connection=url)
if limited:
    q.set_limits(concurrency=1000, rate="1000000/s")
for start in range(0, jobs, 1000):
    q.enqueue_many([("bench.tasks:noop", ())] * min(1000, jobs - start), result_ttl=0)
steps = Steps(client, q.keys)

def lua_usec():
    return client.info("commandstats").get("cmdstat_evalsha", {}).get("usec", 0)

def cpu_usec():  # the server's CPU time: what preemption by other processes does not inflate
    times = server.cpu_times()
    return (times.user + times.system) * 1e6

steps.take("warm", ["cost"], 30000, "w")  # loads the scripts outside the count
client.flushall()
if limited:
    q.set_limits(concurrency=1000, rate="1000000/s")
for start in range(0, jobs, 1000):
    q.enqueue_many([("bench.tasks:noop", ())] * min(1000, jobs - start), result_ttl=0)
before, cpu_before, started = lua_usec(), cpu_usec(), time.perf_counter()
taken, done = steps.take("c0", ["cost"], 30000, "w"), 0
while not isinstance(taken, int):
    done += 1
    code, taken = steps.complete(
        f"c{done - 1}", taken[0], "cost", "null", "json", "w",
        next_take=(f"c{done}", ["cost"], 30000),
    )
elapsed, usec = time.perf_counter() - started, lua_usec() - before
cpu = cpu_usec() - cpu_before
print(json.dumps({"jobs": done, "usec_per_job": usec / done, "cpu_per_job": cpu / done,
                  "rate": done / elapsed}))
"""


def run(tree: Path, server: PrivateRedis, jobs: int, limited: bool) -> Dict[str, float]:
    assert server.process is not None
    code = f"import sys; sys.path.insert(0, {str(tree)!r}); exec({LOOP!r})"
    out = subprocess.run(
        [sys.executable, "-c", code, server.url, str(jobs), "1" if limited else "0"]
        + [str(server.process.pid)],
        cwd=str(tree),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    if result["jobs"] != jobs:
        raise SystemExit(f"{tree}: {result['jobs']} jobs taken of {jobs}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="main", help="the revision to compare against")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20000)
    args = parser.parse_args()
    base_tree = Path(tempfile.mkdtemp(prefix="rqconc-base-")) / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base_tree), args.base],
        check=True,
    )
    server = PrivateRedis().start()
    sides: Dict[str, List[Dict[str, float]]] = {"base": [], "head": [], "head, limits set": []}
    try:
        for _ in range(args.runs):
            sides["base"].append(run(base_tree, server, args.jobs, False))
            sides["head"].append(run(ROOT, server, args.jobs, False))
            sides["head, limits set"].append(run(ROOT, server, args.jobs, True))
    finally:
        server.stop()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)])
    print(f"complete-and-take loop, {args.jobs} no-op jobs, {args.runs} runs, base = {args.base}")
    base = {
        m: statistics.median(r[m] for r in sides["base"]) for m in ("usec_per_job", "cpu_per_job")
    }
    print("medians; Lua = EVALSHA usec (commandstats), CPU = redis-server user+sys time")
    for name, results in sides.items():
        lua, cpu = (
            statistics.median(r[m] for r in results) for m in ("usec_per_job", "cpu_per_job")
        )
        rate = statistics.median(r["rate"] for r in results)
        print(
            f"{name:18} Lua {lua:6.1f} us/job ({lua / base['usec_per_job']:.3f} x base)  "
            f"CPU {cpu:6.1f} us/job ({cpu / base['cpu_per_job']:.3f} x base)  "
            f"loop {rate:7,.0f} jobs/s"
        )
        print(f"{'':18} CPU runs {[round(r['cpu_per_job'], 1) for r in results]}")


if __name__ == "__main__":
    main()
