"""The no-op job end to end, in counts the machine's load does not change (issue 33).

    .venv/bin/python bench/profile_noop.py [--base ed5a5be] [--head REV] [--jobs 100,400]
                                           [--only instructions,trips,functions | setup]
                                           [--out bench/results/profile_noop]

For the base revision (a temporary git worktree) and the working tree, each with its own
code (`main.py forking 1 --max-jobs-per-child N`, the task `bench.tasks:noop`: one INCR on a
module-level client, as the peers' no-op):

1. instructions: redis-server and the producer run under valgrind's callgrind; N single
   enqueues (`q.enqueue(..., result_ttl=0)`), then the worker, its child under callgrind
   too, runs the N jobs and exits (max-jobs). Per job: the producer's instructions per
   enqueue, the child's per job, Redis' per enqueue and per job, and the commands Redis ran
   (`INFO commandstats` calls, inner Lua calls included). Two sizes, N1 and N2: the figure
   is (count(N2) - count(N1)) / (N2 - N1), so start-up (imports, script loads) cancels;
2. trips: the same with a plain redis-server and MONITOR: the commands each client sent
   (round trips) and those Lua ran, per enqueue and per job, by name;
3. functions: the child under cProfile (a sitecustomize starts it in every forked child and
   writes it at os._exit): the functions with the most own time, with their calls per job.
   Calls per job are exact; the time shares are a profile's, good for ranking only.

`--only setup` (the working tree alone): what the complete step costs Redis before it does
anything, the per-call set-up that Redis Functions (loaded once) would not pay.

Writes the tables (markdown) to stdout and the raw files (callgrind dumps, pstats) to --out.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import COUNTER, ROOT, PrivateRedis, kill_group, revision_tree  # noqa: E402
from bench.step_cost import Callgrind  # noqa: E402

FUNC = "bench.tasks:noop"
PRODUCER = """
import sys
from rqconc import Queue
q = Queue("bench", connection=sys.argv[1])
for _ in range(int(sys.argv[2])):
    q.enqueue("bench.tasks:noop", result_ttl=0)
"""
# Started in each forked child (the forking backend's children), written when it ends.
SITECUSTOMIZE = """
import os
_dir = os.environ.get("PROFILE_NOOP_DIR")
if _dir:
    import cProfile
    import time

    def _start():
        profile = cProfile.Profile(time.process_time)  # CPU: a wait on Redis is not the child's
        real_exit = os._exit

        def _exit(code):
            profile.disable()
            profile.dump_stats(os.path.join(_dir, "child.%d.prof" % os.getpid()))
            real_exit(code)

        os._exit = _exit
        profile.enable()

    os.register_at_fork(after_in_child=_start)
"""
VALGRIND = ["valgrind", "--tool=callgrind"]


def env_for(tree: Path, url: str, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ, BENCH_REDIS_URL=url, PYTHONPATH=str(tree), PYTHONUNBUFFERED="1")
    env.pop("REDIS_URL", None)
    env.update(extra or {})
    return env


def worker_argv(url: str, jobs: int) -> List[str]:
    return [
        sys.executable,
        "main.py",
        "forking",
        "1",
        "-q",
        "bench",
        "--url",
        url,
        "--allow",
        "bench",
        "--log-level",
        "WARNING",
        "--max-jobs-per-child",
        str(jobs),
    ]


def totals(path: str) -> int:
    with open(path) as dump:
        return next(int(line.split()[1]) for line in dump if line.startswith("totals:"))


def wait_file(pattern: str, deadline: float) -> str:
    """The first callgrind dump matching `pattern` once it is whole (totals written)."""
    while time.monotonic() < deadline:
        for path in glob.glob(pattern):
            try:
                totals(path)
                return path
            except (StopIteration, ValueError, OSError):
                pass
        time.sleep(0.2)
    raise SystemExit(f"no whole callgrind dump matched {pattern}")


def wait_count(client: redis.Redis, jobs: int, deadline: float) -> None:
    while int(client.get(COUNTER) or 0) < jobs:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {client.get(COUNTER)} of {jobs} jobs ran")
        time.sleep(0.05)


class RedisCounts:
    """Redis' instructions (callgrind) and commands (commandstats) between zero() and read().
    Its timer (serverCron) runs at `hz 1`: under valgrind it would otherwise add
    instructions in proportion to the wall time, which the machine's load sets."""

    def __init__(self, callgrind: Callgrind) -> None:
        self.callgrind = callgrind
        self.client = redis.Redis.from_url(callgrind.url)
        self.client.config_set("hz", 1)

    def zero(self) -> None:
        subprocess.run(
            ["callgrind_control", "-z", str(self.callgrind.process.pid)],
            check=True,
            capture_output=True,
        )
        self.client.config_resetstat()

    def read(self) -> Dict[str, int]:
        stats = self.client.info("commandstats")
        subprocess.run(
            ["callgrind_control", "-d", str(self.callgrind.process.pid)],
            check=True,
            capture_output=True,
        )
        dump = max(glob.glob(f"{self.callgrind.dir}/callgrind.out.*"), key=os.path.getmtime)
        counts = {"redis instructions": totals(dump)}
        for name, value in stats.items():
            if name not in ("cmdstat_info", "cmdstat_config"):
                counts[name.replace("cmdstat_", "redis calls ")] = value["calls"]
        return counts


def produce(tree: Path, url: str, jobs: int, callgrind_out: Optional[Path] = None) -> None:
    """`jobs` single enqueues with `tree`'s code (under callgrind when given a file)."""
    wrap = [*VALGRIND, f"--callgrind-out-file={callgrind_out}"] if callgrind_out else []
    subprocess.run(
        [*wrap, sys.executable, "-c", PRODUCER, url, str(jobs)],
        cwd=str(tree),
        env=env_for(tree, url),
        check=True,
        capture_output=True,
    )


def work(tree: Path, url: str, jobs: int, callgrind_out: Optional[Path] = None) -> Optional[str]:
    """`main.py forking 1` runs `jobs` queued jobs, its child exits (max-jobs); with
    `callgrind_out`, the worker runs under callgrind and the child's dump is returned."""
    wrap = [*VALGRIND, f"--callgrind-out-file={callgrind_out}"] if callgrind_out else []
    log = open(f"{callgrind_out or tempfile.mktemp()}.log".replace("%p", "w"), "wb")
    worker = subprocess.Popen(
        [*wrap, *worker_argv(url, jobs)],
        cwd=str(tree),
        env=env_for(tree, url),
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180 + jobs * (0.5 if callgrind_out else 0.05)
        wait_count(redis.Redis.from_url(url), jobs, deadline)
        if callgrind_out:  # the child's dump, written when it exits
            return wait_file(str(callgrind_out).replace("%p", "*"), deadline)
        return None
    finally:
        kill_group(worker.pid)
        worker.wait(30)
        log.close()


def python_once(tree: Path, url: str, jobs: int, out: Path) -> Dict[str, Dict]:
    """The producer's and the child's instructions, Redis plain."""
    # A plain run first loads the steps' libraries (FLUSHALL keeps them): the measured child
    # never builds one, so its start-up is the same at N1 and N2 and cancels. Without it,
    # the first size's child loaded them and the second's did not (negative counts a job).
    redis.Redis.from_url(url).flushall()
    produce(tree, url, 5)
    work(tree, url, 5)
    redis.Redis.from_url(url).flushall()
    for stale in [*out.glob(f"producer.{jobs}.*"), *out.glob(f"worker.{jobs}.*")]:
        stale.unlink()  # an earlier run's dump would be read as this one's
    produce(tree, url, jobs, out / f"producer.{jobs}.%p")
    producer = totals(glob.glob(str(out / f"producer.{jobs}.*"))[0])
    child = work(tree, url, jobs, out / f"worker.{jobs}.%p")
    assert child is not None
    return {
        "enqueue": {"python instructions": producer},
        "job": {"python instructions": totals(child)},
        "dump": {"child": child},
    }


def redis_once(tree: Path, counts: RedisCounts, jobs: int) -> Dict[str, Dict]:
    """Redis' instructions and commands, the producer and the worker plain."""
    url = counts.callgrind.url
    counts.client.flushall()
    counts.zero()
    produce(tree, url, jobs)
    enqueue = counts.read()
    counts.zero()
    work(tree, url, jobs)
    return {"enqueue": enqueue, "job": counts.read()}


def self_costs(dump: str) -> Counter:
    """Instructions by C function (own cost, callgrind_annotate), a function named by its
    file's last part: `ceval.c:_PyEval_EvalFrameDefault`."""
    listing = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", dump],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    costs: Counter = Counter()
    for line in listing.splitlines():
        count, _, rest = line.strip().partition(" ")
        if ":" not in rest or not count.replace(",", "").isdigit():
            continue
        where = rest.split(") ", 1)[-1].split(" [")[0]
        path, _, name = where.rpartition(":")
        costs[f"{Path(path).name}:{name.split(chr(39))[0]}"] += int(count.replace(",", ""))
    return costs


def per_unit(small: Dict[str, int], large: Dict[str, int], span: int) -> Dict[str, float]:
    return {k: (large.get(k, 0) - small.get(k, 0)) / span for k in set(small) | set(large)}


def instructions(tree: Path, sizes: Tuple[int, int], out: Path) -> Dict[str, Dict[str, float]]:
    server = PrivateRedis().start()
    try:
        warm = python_once(tree, server.url, sizes[0], out)
        full = python_once(tree, server.url, sizes[1], out)
    finally:
        server.stop()
    callgrind = Callgrind()
    try:
        counts = RedisCounts(callgrind)
        for found, size in ((warm, sizes[0]), (full, sizes[1])):
            for side, values in redis_once(tree, counts, size).items():
                found[side].update(values)
    finally:
        callgrind.stop()
    span = sizes[1] - sizes[0]
    result = {side: per_unit(warm[side], full[side], span) for side in ("enqueue", "job")}
    small, large = self_costs(warm["dump"]["child"]), self_costs(full["dump"]["child"])
    result["child functions"] = per_unit(small, large, span)
    return result


class Monitor(threading.Thread):
    """Every command Redis runs, by phase, who sent it (a client or Lua) and name."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.client = redis.Redis.from_url(url)
        self.phase = ""
        self.seen: Counter = Counter()

    def run(self) -> None:
        try:
            with self.client.monitor() as monitor:
                for command in monitor.listen():
                    self.count(command)
        except redis.ConnectionError:  # the server stopped: the run is over
            pass

    def count(self, command: Dict) -> None:
        who = "lua" if command.get("client_type") == "lua" else "trip"
        name = command["command"].split(" ", 1)[0].strip('"').lower()
        if self.phase and not (who == "trip" and COUNTER in command["command"] and name == "get"):
            self.seen[(self.phase, who, name)] += 1  # the harness' polls of the counter aside


def trips_once(tree: Path, url: str, monitor: Monitor, jobs: int) -> Dict[str, Counter]:
    client = redis.Redis.from_url(url)
    client.flushall()
    settle = 0.5  # MONITOR's stream runs behind Redis: let it catch up between phases
    time.sleep(settle)
    monitor.seen.clear()
    monitor.phase = "enqueue"
    subprocess.run(
        [sys.executable, "-c", PRODUCER, url, str(jobs)],
        cwd=str(tree),
        env=env_for(tree, url),
        check=True,
        capture_output=True,
    )
    time.sleep(settle)
    monitor.phase = "job"
    worker = subprocess.Popen(
        worker_argv(url, jobs),
        cwd=str(tree),
        env=env_for(tree, url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_count(client, jobs, time.monotonic() + 120)
        time.sleep(settle)
    finally:
        kill_group(worker.pid)
        worker.wait(30)
    monitor.phase = ""
    split: Dict[str, Counter] = {"enqueue": Counter(), "job": Counter()}
    for (phase, who, name), n in monitor.seen.items():
        split[phase][f"{who} {name}"] += n
    return split


def trips(tree: Path, sizes: Tuple[int, int]) -> Dict[str, Dict[str, float]]:
    server = PrivateRedis().start()
    try:
        monitor = Monitor(server.url)
        monitor.start()
        time.sleep(0.2)
        warm = trips_once(tree, server.url, monitor, sizes[0])
        full = trips_once(tree, server.url, monitor, sizes[1])
    finally:
        server.stop()
    span = sizes[1] - sizes[0]
    return {side: per_unit(warm[side], full[side], span) for side in ("enqueue", "job")}


def functions(tree: Path, jobs: int, out: Path) -> List[Tuple[str, float, float, float]]:
    """(function, calls per job, share of own time, share of cumulative time) of the child."""
    server = PrivateRedis().start()
    site = Path(tempfile.mkdtemp(prefix="profile-noop-site-"))
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    prof_dir = out / "cprofile"
    prof_dir.mkdir(parents=True, exist_ok=True)
    for old in prof_dir.glob("child.*.prof"):
        old.unlink()
    try:
        subprocess.run(
            [sys.executable, "-c", PRODUCER, server.url, str(jobs)],
            cwd=str(tree),
            env=env_for(tree, server.url),
            check=True,
            capture_output=True,
        )
        env = env_for(tree, server.url, {"PROFILE_NOOP_DIR": str(prof_dir)})
        env["PYTHONPATH"] = f"{site}{os.pathsep}{tree}"
        worker = subprocess.Popen(
            worker_argv(server.url, jobs),
            cwd=str(tree),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            wait_count(redis.Redis.from_url(server.url), jobs, deadline)
            while not list(prof_dir.glob("child.*.prof")) and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)  # the file is written by now (a dump is one write)
        finally:
            kill_group(worker.pid)
            worker.wait(30)
    finally:
        server.stop()
    stats = pstats.Stats(str(next(prof_dir.glob("child.*.prof"))))
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (path, line, name), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore
        for package in ("/rqconc/", "/bench/", "/site-packages/", "/lib/python3"):
            if package in path:
                path = package.strip("/") + "/" + path.split(package)[-1]
                break
        path = path.replace("site-packages/", "").replace("lib/python3/", "")
        where = f"{path}:{line}({name})" if line else name
        rows.append((where, calls / jobs, own / total, cumulative / total))
    return rows


# What a hot step costs Redis before it does anything (issue 33: are Redis Functions worth
# it?): run in the working tree's own code, Redis under callgrind.
SETUP = """
import glob, json, os, subprocess, sys, redis
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import script
url, pid, folder, n = sys.argv[1], sys.argv[2], sys.argv[3], 300
client, k = redis.Redis.from_url(url), KeySpace()
client.config_set("hz", 1)

def per_call(body, *keys_and_args):
    sha = client.script_load(body)
    client.evalsha(sha, *keys_and_args)
    subprocess.run(["callgrind_control", "-z", pid], check=True, capture_output=True)
    for _ in range(n):
        client.evalsha(sha, *keys_and_args)
    subprocess.run(["callgrind_control", "-d", pid], check=True, capture_output=True)
    dump = max(glob.glob(folder + "/callgrind.out.*"), key=os.path.getmtime)
    return next(int(l.split()[1]) for l in open(dump) if l.startswith("totals:")) / n

keys = [k.active, k.claims, k.job("x"), k.started("q"), k.finished("q"), k.seq, k.events,
        k.queue("q"), k.marker("q"), k.scheduled("q"), k.started("q")]
args = ["c", "x", "null", "json", "w", "n", 30000, 1]
call = (len(keys), *keys, *args)
source = script("complete").source
body = source.index("local nq = tonumber(ARGV[8])")  # complete.lua's own code starts
out = {
    "EVALSHA 'return 1', no keys or args": per_call("return 1", 0),
    "EVALSHA 'return 1', complete+take's 11 keys and 8 args": per_call("return 1", *call),
    "EVALSHA 'return TIME'": per_call("return redis.call('TIME')", 0),
    "complete, returning before its first line": per_call(
        "if true then return 1 end " + source, *call),
    "complete, returning after its definitions (TIME included)": per_call(
        source[:body] + "if true then return 1 end " + source[body:], *call),
}
print(json.dumps(out))
"""


def setup_costs() -> Dict[str, float]:
    """Instructions per call of the working tree's complete step cut short (SETUP)."""
    callgrind = Callgrind()
    try:
        done = subprocess.run(
            [sys.executable, "-c", SETUP, callgrind.url, str(callgrind.process.pid), callgrind.dir],
            cwd=str(ROOT),
            env=env_for(ROOT, callgrind.url),
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        callgrind.stop()
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(
    title: str, base: Dict[str, float], head: Dict[str, float], scale: float, top: int = 1000
) -> str:
    lines = [f"| {title} | base | head | head - base |", "|---|---:|---:|---:|"]
    keys = sorted(set(base) | set(head), key=lambda k: (-abs(head.get(k, 0)), k))[:top]
    for key in keys:
        factor = scale if "instructions" in key or ":" in key else 1
        b, h = base.get(key, 0) / factor, head.get(key, 0) / factor
        if abs(b) < 0.005 and abs(h) < 0.005:
            continue
        lines.append(f"| {key} | {b:,.2f} | {h:,.2f} | {h - b:+,.2f} |")
    return "\n".join(lines)


def function_table(rows: List[Tuple[str, float, float, float]], top: int) -> str:
    lines = ["| function | calls/job | own time | cumulative |", "|---|---:|---:|---:|"]
    for where, calls, own, cumulative in sorted(rows, key=lambda r: -r[2])[:top]:
        lines.append(f"| `{where}` | {calls:.2f} | {own:.1%} | {cumulative:.1%} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="ed5a5be", help="the revision to compare against")
    parser.add_argument("--head", default="", help="a revision in place of the working tree")
    parser.add_argument("--jobs", default="100,400", help="N1,N2 (instructions, trips)")
    parser.add_argument("--only", default="instructions,trips,functions")
    parser.add_argument("--profile-jobs", type=int, default=3000, help="jobs under cProfile")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "profile_noop"))
    args = parser.parse_args()
    if args.only == "setup":  # the working tree alone
        print("| complete step, cut short | Redis instructions per call |\n|---|---:|")
        for name, value in setup_costs().items():
            print(f"| {name} | {value:,.0f} |")
        return
    small, large = (int(n) for n in args.jobs.split(","))
    only = set(args.only.split(","))
    out = Path(args.out)
    results: Dict[str, Dict] = {}
    with revision_tree(args.base) as base_tree, revision_tree(args.head or "HEAD") as head_tree:
        for side, tree in (("base", base_tree), ("head", head_tree if args.head else ROOT)):
            side_out = out / side
            side_out.mkdir(parents=True, exist_ok=True)
            found: Dict = {}
            if "instructions" in only:
                found["instructions"] = instructions(tree, (small, large), side_out)
            if "trips" in only:
                found["trips"] = trips(tree, (small, large))
            if "functions" in only:
                found["functions"] = functions(tree, args.profile_jobs, side_out)
            results[side] = found
    (out / "profile.json").write_text(json.dumps(results, indent=1, default=str))
    base, head = results["base"], results["head"]
    head_name = args.head or "the working tree"
    print(f"base {args.base} against {head_name}; N1,N2 = {small},{large}\n")
    for kind, scale, unit in (("instructions", 1000, "thousands per"), ("trips", 1, "per")):
        if kind in only:
            for side in ("enqueue", "job"):
                print(table(f"{kind}, {unit} {side}", base[kind][side], head[kind][side], scale))
                print()
    if "instructions" in only:
        title = "child's instructions by C function, thousands per job"
        b, h = base["instructions"]["child functions"], head["instructions"]["child functions"]
        print(table(title, b, h, 1000, args.top))
        print()
    if "functions" in only:
        for side in ("base", "head"):
            print(f"child functions, {side} ({args.profile_jobs} jobs under cProfile)\n")
            print(function_table(results[side]["functions"], args.top))
            print()


if __name__ == "__main__":
    main()
