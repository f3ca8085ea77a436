"""Redis CPU of each hot step on its own, a base revision against the working tree (issue 21).

    .venv/bin/python bench/step_cost.py [--base main] [--rounds 5] [--jobs 5000]
    .venv/bin/python bench/step_cost.py --callgrind --rounds 1 --jobs 1000

Checks REV out into a temporary git worktree; then, round by round, alternating base and
head on one private Redis, runs STEPS (below) with each tree's own code in a process of its
own: serially, as a worker's child makes them, without any task or worker around them. Per
step it records redis-server's CPU per job (`INFO cpu`, user + sys) and the commands its
Lua script called per job (`INFO commandstats`, without EVALSHA or FCALL itself: exact,
whatever the load). On a shared machine the CPU figures move with the load; the medians of
alternating rounds compare the two trees under the same load. With --callgrind, Redis runs under
valgrind and the figure is the instructions it executes per job: the same on any load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, PrivateRedis, free_port, redis_binary, revision_tree  # noqa: E402

STEP_NAMES = (
    "enqueue single",
    "enqueue batch",
    "take",
    "complete",
    "complete (result kept)",
    "complete + take",
    "complete + take, 8 slots together",
)

# One round of every step with the code of the tree it runs in; prints one JSON object.
STEPS = """
import glob, json, os, subprocess, sys, redis
from rqconc import Queue
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import Steps
url, n, callgrind = sys.argv[1], int(sys.argv[2]), sys.argv[3]  # callgrind: its pid, or ""
client = redis.Redis.from_url(url)
steps = Steps(client, KeySpace())
out = {}

def instructions(flag):  # zero (-z) or dump (-d) the counts; a dump's total
    subprocess.run(["callgrind_control", flag, callgrind], check=True, capture_output=True)
    if flag == "-d":
        dump = max(glob.glob(f"{sys.argv[4]}/callgrind.out.*"), key=os.path.getmtime)
        return next(int(line.split()[1]) for line in open(dump) if line.startswith("totals:"))

def measure(name, body):
    client.config_resetstat()
    info = client.info("cpu")
    before = float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    if callgrind:
        instructions("-z")
    body()
    ir = instructions("-d") if callgrind else 0
    info = client.info("cpu")
    cpu = float(info["used_cpu_user"]) + float(info["used_cpu_sys"]) - before
    stats = client.info("commandstats")
    skipped = ("cmdstat_evalsha", "cmdstat_fcall", "cmdstat_info", "cmdstat_config")
    inner = sum(v["calls"] for k, v in stats.items() if not k.startswith(skipped))
    out[name] = {"cpu_us": cpu * 1e6 / n, "commands": inner / n, "kinstr": ir / n / 1000}

def fill(ttl):
    client.flushall()
    q = Queue("bench", connection=url)
    kept = {} if ttl is None else {"result_ttl": ttl}  # None: the default (500 s)
    for s in range(0, n + 1, 1000):
        q.enqueue_many([("bench.tasks:noop", ())] * min(1000, n + 1 - s), **kept)
    return q

def warm():  # load every script outside the measured loops
    q = fill(0)
    job_id, _ = steps.take("w0", ["bench"], 30000, "w")
    steps.complete("w0", job_id, "bench", "null", "json", "w", next_take=("w1", ["bench"], 30000))
    q.enqueue("bench.tasks:noop", result_ttl=0)

warm()
client.flushall()
q = Queue("bench", connection=url)
measure("enqueue single", lambda: [q.enqueue("bench.tasks:noop", result_ttl=0) for _ in range(n)])
client.flushall()
measure("enqueue batch", lambda: [q.enqueue_many([("bench.tasks:noop", ())] * 1000, result_ttl=0)
                                  for _ in range(n // 1000)])
for ttl, name in ((0, "complete"), (None, "complete (result kept)")):
    fill(ttl)
    ids = []
    measure("take", lambda: ids.extend(steps.take("c%d" % i, ["bench"], 30000, "w")[0]
                                       for i in range(n)))
    measure(name, lambda: [steps.complete("c%d" % i, job_id, "bench", "null", "json", "w")
                           for i, job_id in enumerate(ids)])
fill(0)
job_id, _ = steps.take("f0", ["bench"], 30000, "w")

def fused():
    global job_id
    for i in range(1, n + 1):
        _, taken = steps.complete("f%d" % (i - 1), job_id, "bench", "null", "json", "w",
                                  next_take=("f%d" % i, ["bench"], 30000))
        job_id = taken[0]

measure("complete + take", fused)

# Eight slots of one process finishing together: one complete_many step where the tree has
# it (the slots' completions combined, rqconc/worker/completions.py), else eight fused steps.
try:
    from rqconc.store.steps.batch import complete_many
except ImportError:
    complete_many = None
fill(0)
q.enqueue_many([("bench.tasks:noop", ())] * 8, result_ttl=0)
held = [steps.take("g%d.0" % s, ["bench"], 30000, "w")[0] for s in range(8)]

def together():
    global held
    for r in range(1, n // 8 + 1):
        claims = [("g%d.%d" % (s, r - 1), "g%d.%d" % (s, r)) for s in range(8)]
        if complete_many:
            done = complete_many(steps, [(c, job, "bench", "null", "json", nc) for (c, nc), job
                                         in zip(claims, held)], ["bench"], 30000, "w")
        else:
            done = [steps.complete(c, job, "bench", "null", "json", "w",
                                   next_take=(nc, ["bench"], 30000))
                    for (c, nc), job in zip(claims, held)]
        held = [taken[0] for _, taken in done]

measure("complete + take, 8 slots together", together)
print(json.dumps(out))
"""


class Callgrind:
    """redis-server run by valgrind's callgrind: the instructions each step makes it execute,
    which the machine's load does not change (slow: use few jobs)."""

    def __init__(self) -> None:
        if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
            raise SystemExit("--callgrind needs valgrind (apt-get install valgrind)")
        self.dir = tempfile.mkdtemp(prefix="rqconc-callgrind-")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.dir}/callgrind.out.%p"]
        # hz 1: Redis' timer (serverCron) would otherwise add instructions in proportion to
        # the wall time, which the machine's load sets (about 10% of a step under load).
        argv += [redis_binary(), "--port", str(self.port), "--save", "", "--appendonly", "no"]
        argv += ["--hz", "1"]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 60
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise SystemExit("redis-server did not start under valgrind") from None
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


def one_round(
    tree: Path, url: str, jobs: int, callgrind: Optional[Callgrind] = None
) -> Dict[str, Dict[str, float]]:
    argv = [sys.executable, "-c", STEPS, url, str(jobs)]
    argv += [str(callgrind.process.pid), callgrind.dir] if callgrind else ["", ""]
    env = {"PYTHONPATH": str(tree), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    done = subprocess.run(argv, cwd=str(tree), env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(base: str, rounds: Dict[str, List[Dict[str, Dict[str, float]]]], field: str) -> str:
    unit = {"cpu_us": "Redis CPU us/job", "kinstr": "Redis instructions/job (thousands)"}[field]
    lines = [
        f"| step | base ({base}): {unit} | head | head/base | base commands | head commands |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for step in STEP_NAMES:
        value = {side: statistics.median(r[step][field] for r in rs) for side, rs in rounds.items()}
        cmds = {side: rs[-1][step]["commands"] for side, rs in rounds.items()}
        lines.append(
            f"| {step} | {value['base']:.1f} | {value['head']:.1f} | "
            f"{value['head'] / value['base']:.2f} | {cmds['base']:.2f} | {cmds['head']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="main", help="the revision to compare against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=5000, help="per step (a multiple of 1000)")
    parser.add_argument(
        "--callgrind", action="store_true", help="count instructions instead (needs valgrind)"
    )
    args = parser.parse_args()
    rounds: Dict[str, List[Dict[str, Dict[str, float]]]] = {"base": [], "head": []}
    with revision_tree(args.base) as base_tree:
        callgrind = Callgrind() if args.callgrind else None
        server = None if callgrind else PrivateRedis().start()
        url = callgrind.url if callgrind else server.url  # type: ignore[union-attr]
        version = redis.Redis.from_url(url).info("server")["redis_version"]
        try:
            for _ in range(args.rounds):
                rounds["base"].append(one_round(base_tree, url, args.jobs, callgrind))
                rounds["head"].append(one_round(ROOT, url, args.jobs, callgrind))
        finally:
            if callgrind:
                callgrind.stop()
            if server:
                server.stop()
    print(f"Redis {version}, {args.jobs} jobs per step, median of {args.rounds} rounds")
    print(table(args.base, rounds, "kinstr" if callgrind else "cpu_us"))


if __name__ == "__main__":
    main()
