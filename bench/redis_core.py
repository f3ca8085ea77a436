"""Jobs/s per Redis core when Redis, not the workers, is the bottleneck (issue 21).

    .venv/bin/python bench/redis_core.py [--base e9e1e82] [--runs 5] [--jobs 20000]
                                         [--quota 0.25] [--workers forking:4] [--results]

Issue 21 asks for 1.8x the jobs/s per Redis core of e9e1e82 (the code when it was filed) in
a run where Redis is the bottleneck. On this 2-core machine the workers saturate the cores
long before one Redis core does, so Redis gets less: one private redis-server
(bench.common.PrivateRedis) runs in a cgroup v1 cpu group of its own with
cpu.cfs_quota_us = QUOTA x cpu.cfs_period_us (--quota 0.25: a quarter of one core), pinned
to CPU 0 (every thread, as `taskset -a -cp 0 PID` does). The group's cpu.shares is the
maximum, so Redis gets its whole quota whenever it has work, however busy the workers keep
CPU 0: the quota, not the workers, caps it. jobs/s / QUOTA is then jobs/s per Redis core.

Each run, alternating --base (in a temporary git worktree) and head (this working tree),
each with its own code: FLUSHALL; the tree's bench.peers.rqconc batch-enqueues --jobs
`quiet` jobs (they send Redis nothing and append a byte to $BENCH_DONE_FILE; untimed); then
that tree's worker starts (`python main.py forking 4 -q bench ...` from the tree's root).
Measured over the middle 80% of the jobs (from 10% to 90% done, so neither the worker's
start-up nor the draining tail counts): jobs/s; redis-server's CPU (user + sys, the figures
`INFO cpu` reports, read from /proc so that reading them does not wait for a throttled
Redis) per job and as a fraction of the quota (near 1.0: Redis was the bottleneck); the
group's throttled periods (cpu.stat nr_throttled; > 0: the quota bound); the worker
processes' CPU (psutil, the whole process tree) per job and in cores (below the cores left
beside Redis: the workers were not the bottleneck). --results writes the table into
bench/RESULTS.md between the markers below.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

import psutil
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (  # noqa: E402
    DONE_FILE,
    ROOT,
    PrivateRedis,
    Timeout,
    Workers,
    replace_section,
    revision_tree,
    worker_env,
)
from bench.cost_driver import wait_done  # noqa: E402

CGROUP_CPU = Path("/sys/fs/cgroup/cpu")
ISSUE_21_FILED = "e9e1e82"


def markers(workers: str) -> Tuple[str, str]:
    """One section of bench/RESULTS.md per worker mode (make bench runs two)."""
    return f"<!-- redis-core {workers}:begin -->", f"<!-- redis-core {workers}:end -->"


MIDDLE = (0.1, 0.9)  # the measured window, as fractions of the jobs done

# Run by the tree's own Python code (cwd and PYTHONPATH = the tree): fills the queue and
# prints the worker command lines of that tree's bench.peers.rqconc.
FILL = """
import json, sys
import rqconc
from bench.peers import rqconc as peer
peer.enqueue_batch("quiet", int(sys.argv[1]))
print(json.dumps({"argv": peer.workers(sys.argv[2], sys.executable), "rqconc": rqconc.__file__}))
"""


class CpuQuota:
    """A cgroup v1 cpu group holding redis-server: QUOTA of one core, the maximum shares."""

    def __init__(self, fraction: float) -> None:
        self.path = CGROUP_CPU / f"rqconc-redis-core-{os.getpid()}"
        try:
            self.path.mkdir()
            self.period = int(self.read("cpu.cfs_period_us"))
            self.write("cpu.cfs_quota_us", int(fraction * self.period))
            self.write("cpu.shares", 262144)
        except OSError as exc:
            self.remove()
            raise SystemExit(
                f"redis_core: the cgroup v1 cpu controller is not writable ({CGROUP_CPU}: "
                f"{exc.strerror}); it needs root and a cgroup v1 cpu hierarchy"
            ) from None

    def read(self, name: str) -> str:
        return (self.path / name).read_text()

    def write(self, name: str, value: int) -> None:
        with open(self.path / name, "w") as out:
            out.write(f"{value}\n")

    def stat(self) -> Dict[str, int]:
        return {k: int(v) for k, v in (line.split() for line in self.read("cpu.stat").splitlines())}

    def remove(self) -> None:
        if not self.path.exists():
            return
        for tid in self.read("tasks").split():  # a group with tasks in it cannot be removed
            try:
                with open(CGROUP_CPU / "tasks", "w") as out:
                    out.write(tid)
            except OSError:
                pass  # the thread ended meanwhile
        self.path.rmdir()


def confine(server: PrivateRedis, quota: CpuQuota) -> None:
    """redis-server and its threads into the group, pinned to CPU 0."""
    assert server.process is not None
    quota.write("cgroup.procs", server.process.pid)
    for tid in os.listdir(f"/proc/{server.process.pid}/task"):
        os.sched_setaffinity(int(tid), {0})


def fill(tree: Path, url: str, jobs: int, mode: str) -> List[List[str]]:
    env = dict(os.environ, PYTHONPATH=str(tree), BENCH_REDIS_URL=url)
    argv = [sys.executable, "-c", FILL, str(jobs), mode]
    done = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"redis_core: enqueue with {tree}'s code failed:\n{done.stderr[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if not out["rqconc"].startswith(str(tree)):
        raise SystemExit(f"redis_core: {tree} imported rqconc from {out['rqconc']}")
    return out["argv"]


def tree_cpu(pids: List[int]) -> float:
    """CPU seconds of these processes and all their descendants, living or reaped."""
    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            family = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for proc in family:
            try:
                t = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += t.user + t.system + t.children_user + t.children_system
    return total


def snapshot(done: Path, redis_pid: int, quota: CpuQuota, pids: List[int]) -> Dict[str, float]:
    now, count = time.perf_counter(), done.stat().st_size
    server = psutil.Process(redis_pid).cpu_times()
    return {
        "t": now,
        "jobs": count,
        "redis": server.user + server.system,
        **{k: float(v) for k, v in quota.stat().items() if k.startswith("nr_")},
        "workers": tree_cpu(pids),
    }


def one_run(
    tree: Path, server: PrivateRedis, quota: CpuQuota, args: argparse.Namespace, logs: Path
) -> Dict[str, float]:
    assert server.process is not None
    redis.Redis.from_url(server.url).flushall()
    argvs = fill(tree, server.url, args.jobs, args.workers)
    done = logs / f"done-{time.monotonic_ns()}"
    log = logs / "workers.log"
    env = worker_env(server.url, {DONE_FILE: str(done), "PYTHONPATH": str(tree)})
    workers = Workers()
    deadline = time.monotonic() + 600
    try:
        for argv in argvs:
            workers.start(argv, env, log_path=str(log), cwd=tree)
        pids = [p.pid for p in workers.processes]
        marks = []
        for fraction in MIDDLE:
            wait_done(done, int(args.jobs * fraction), deadline, workers)
            marks.append(snapshot(done, server.process.pid, quota, pids))
        wait_done(done, args.jobs, deadline, workers)
    except (RuntimeError, Timeout) as exc:
        raise SystemExit(f"redis_core: {tree}: {exc}\n{log.read_text()[-2000:]}") from None
    finally:
        workers.kill()
    if done.stat().st_size != args.jobs:
        raise SystemExit(f"redis_core: {done.stat().st_size} completions of {args.jobs} jobs")
    a, b = marks
    wall, jobs = b["t"] - a["t"], b["jobs"] - a["jobs"]
    return {
        "rate": jobs / wall,
        "per_core": jobs / wall / args.quota,
        "redis_us": (b["redis"] - a["redis"]) * 1e6 / jobs,
        "redis_use": (b["redis"] - a["redis"]) / wall / args.quota,
        "throttled": b["nr_throttled"] - a["nr_throttled"],
        "periods": b["nr_periods"] - a["nr_periods"],
        "workers_us": (b["workers"] - a["workers"]) * 1e6 / jobs,
        "workers_cores": (b["workers"] - a["workers"]) / wall,
    }


def describe(side: str, r: Dict[str, float]) -> str:
    return (
        f"{side:4} {r['rate']:7,.0f} jobs/s  {r['per_core']:7,.0f} per Redis core  "
        f"Redis {r['redis_us']:5.1f} us/job, {r['redis_use']:.0%} of quota, throttled "
        f"{r['throttled']:.0f}/{r['periods']:.0f} periods  workers {r['workers_us']:5.0f} "
        f"us/job, {r['workers_cores']:.2f} cores"
        + ("  (Redis below its quota: not the bottleneck)" if r["redis_use"] < 0.9 else "")
    )


def table(runs: Dict[str, List[Dict[str, float]]], base: str) -> Tuple[List[str], float]:
    med = {s: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for s, rs in runs.items()}
    lines = [
        "| tree | jobs/s (median) | jobs/s per Redis core | Redis CPU us/job | Redis use of "
        "quota | throttled periods | workers CPU us/job | workers' cores | jobs/s of each run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for side, label in (("base", f"base ({base})"), ("head", "head (working tree)")):
        m, each = med[side], ", ".join(f"{r['rate']:,.0f}" for r in runs[side])
        lines.append(
            f"| {label} | {m['rate']:,.0f} | {m['per_core']:,.0f} | {m['redis_us']:.1f} | "
            f"{m['redis_use']:.0%} | {m['throttled']:.0f} of {m['periods']:.0f} | "
            f"{m['workers_us']:.0f} | {m['workers_cores']:.2f} | {each} |"
        )
    return lines, med["head"]["rate"] / med["base"]["rate"]


def section(lines: List[str], ratio: float, args: argparse.Namespace, note: str) -> str:
    command = " ".join(["bench/redis_core.py", *sys.argv[1:]])
    begin, end = markers(args.workers)
    return "\n".join(
        [
            begin,
            f"## Issue 21: jobs/s per Redis core, Redis the bottleneck (`{args.workers}`)",
            "",
            f"`.venv/bin/python {command}`: {note}. Runs per tree: {args.runs}, alternating "
            f"base and head; {args.jobs:,} `quiet` jobs per run (they send Redis nothing), "
            f"worker `{args.workers}`; measured from 10% to 90% of the jobs done; medians. "
            "Per Redis core = jobs/s / quota. Redis use of quota near 100% and throttled "
            "periods > 0: Redis was the bottleneck; the workers' cores stay below the "
            "machine's cores left beside Redis.",
            "",
            *lines,
            "",
            f"**head/base: {ratio:.2f}x** jobs/s per Redis core (issue 21: at least 1.8x).",
            end,
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default=ISSUE_21_FILED, help="the revision to compare against")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--quota", type=float, default=0.25, help="Redis's share of one core")
    parser.add_argument("--workers", default="forking:4", help="BACKEND:SIZE[:SLOTS]")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md's table")
    args = parser.parse_args()
    if not 0 < args.quota <= 1:
        parser.error("--quota is a fraction of one core: 0 < QUOTA <= 1")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up as on Ctrl-C
    quota = CpuQuota(args.quota)
    server = None
    runs: Dict[str, List[Dict[str, float]]] = {"base": [], "head": []}
    try:
        with revision_tree(args.base) as base_tree, tempfile.TemporaryDirectory() as logs:
            server = PrivateRedis().start()
            confine(server, quota)
            version = server.version()
            for _ in range(args.runs):
                for side, tree in (("base", base_tree), ("head", ROOT)):
                    runs[side].append(one_run(tree, server, quota, args, Path(logs)))
                    print(describe(side, runs[side][-1]), flush=True)
    finally:
        if server is not None:
            server.stop()
        quota.remove()
    note = (
        f"Redis {version} pinned to CPU 0 of this machine's {os.cpu_count()} cores, with "
        f"cpu.cfs_quota_us {int(args.quota * quota.period)} of cpu.cfs_period_us "
        f"{quota.period} ({args.quota:.0%} of one core: on 2 cores the workers, not Redis, "
        "would otherwise be the bottleneck)"
    )
    lines, ratio = table(runs, args.base)
    print("\n".join([note, "", *lines, "", f"head/base {ratio:.2f}x"]))
    for side, rs in runs.items():
        use = statistics.median(r["redis_use"] for r in rs)
        if use < 0.9:
            print(
                f"warning: {side}: Redis used {use:.0%} of its quota, so it was not the "
                "bottleneck: more workers (--workers) or a lower --quota"
            )
    if args.results:
        replace_section(*markers(args.workers), section(lines, ratio, args, note))
        print("wrote the redis-core section of bench/RESULTS.md")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # everything is cleaned up by then
        raise SystemExit("redis_core: interrupted") from None
