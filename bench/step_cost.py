"""Redis CPU of each hot step on its own, a base revision against the working tree (issue 21).

    .venv/bin/python bench/step_cost.py [--base main] [--rounds 5] [--jobs 5000]

Checks REV out into a temporary git worktree; then, round by round, alternating base and
head on one private Redis, runs STEPS (below) with each tree's own code in a process of its
own: serially, as a worker's child makes them, without any task or worker around them. Per
step it records redis-server's CPU per job (`INFO cpu`, user + sys) and the commands its
Lua script called per job (`INFO commandstats`, without EVALSHA itself: exact, whatever the
load). On a shared machine the CPU figures move with the load; the medians of alternating
rounds compare the two trees under the same load.
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

STEP_NAMES = (
    "enqueue single",
    "enqueue batch",
    "take",
    "complete",
    "complete (result kept)",
    "complete + take",
)

# One round of every step with the code of the tree it runs in; prints one JSON object.
STEPS = """
import json, sys, redis
from rqconc import Queue
from rqconc.queue.keys import KeySpace
from rqconc.queue.steps import Steps
url, n = sys.argv[1], int(sys.argv[2])
client = redis.Redis.from_url(url)
steps = Steps(client, KeySpace())
out = {}

def measure(name, body):
    client.config_resetstat()
    info = client.info("cpu")
    before = float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    body()
    info = client.info("cpu")
    cpu = float(info["used_cpu_user"]) + float(info["used_cpu_sys"]) - before
    stats = client.info("commandstats")
    skipped = ("cmdstat_evalsha", "cmdstat_info", "cmdstat_config")
    inner = sum(v["calls"] for k, v in stats.items() if not k.startswith(skipped))
    out[name] = {"cpu_us": cpu * 1e6 / n, "commands": inner / n}

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
print(json.dumps(out))
"""


def one_round(tree: Path, url: str, jobs: int) -> Dict[str, Dict[str, float]]:
    argv = [sys.executable, "-c", STEPS, url, str(jobs)]
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(argv, cwd=str(tree), env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(base: str, rounds: Dict[str, List[Dict[str, Dict[str, float]]]]) -> str:
    lines = [
        f"| step | base ({base}) us/job | head us/job | head/base | base commands | "
        "head commands |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for step in STEP_NAMES:
        cpu = {
            side: statistics.median(r[step]["cpu_us"] for r in rs) for side, rs in rounds.items()
        }
        cmds = {side: rs[-1][step]["commands"] for side, rs in rounds.items()}
        lines.append(
            f"| {step} | {cpu['base']:.1f} | {cpu['head']:.1f} | "
            f"{cpu['head'] / cpu['base']:.2f} | {cmds['base']:.2f} | {cmds['head']:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="main", help="the revision to compare against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=5000, help="per step (a multiple of 1000)")
    args = parser.parse_args()
    base_tree = Path(tempfile.mkdtemp(prefix="rqconc-base-")) / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(base_tree), args.base],
        check=True,
    )
    server = PrivateRedis().start()
    version = server.version()
    rounds: Dict[str, List[Dict[str, Dict[str, float]]]] = {"base": [], "head": []}
    try:
        for _ in range(args.rounds):
            rounds["base"].append(one_round(base_tree, server.url, args.jobs))
            rounds["head"].append(one_round(ROOT, server.url, args.jobs))
    finally:
        server.stop()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)])
    print(f"Redis {version}, {args.jobs} jobs per step, median of {args.rounds} rounds")
    print(table(args.base, rounds))


if __name__ == "__main__":
    main()
