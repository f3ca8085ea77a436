"""Where an rqconc no-op job's time goes: Redis round trips per job and py-spy profiles.

    .venv/bin/python bench/profile_rqconc.py [--backend forking] [--size 2] [--jobs 40000]
                                             [--seconds 8] [--out bench/results/profile]
                                             [--slots K] [--task noop|sleep10|asleep10]

1. a private redis-server; N no-op jobs queued (enqueue_many, result_ttl=0);
2. CPU seconds per job of Redis, the supervisor and each child (psutil), unprofiled;
3. a short MONITOR run (20 jobs, one child) records the exact command sequence of each job;
4. `main.py BACKEND SIZE` drains the queue while py-spy (bench/.peers-venv) samples the
   supervisor and one child for --seconds, wall clock (idle included); INFO commandstats
   deltas over the same jobs give commands per job, inner Lua calls included;
5. prints, per process, the functions with the most samples (self and cumulative) and writes
   the raw collapsed stacks to --out.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import COUNTER, ROOT, PrivateRedis, kill_group, worker_env  # noqa: E402

PYSPY = os.environ.get("BENCH_PYSPY", str(ROOT / "bench" / ".peers-venv" / "bin" / "py-spy"))


# What every run profiles besides the backend and size (set from the command line).
SETTINGS = {"task": "noop", "slots": 1}


def fill(url: str, n: int) -> None:
    from rqconc import Queue

    queue = Queue("bench", connection=url)
    func = f"bench.tasks:{SETTINGS['task']}"
    for start in range(0, n, 1000):
        queue.enqueue_many([(func, ())] * min(1000, n - start), result_ttl=0)


def start_worker(url: str, backend: str, size: int) -> subprocess.Popen:
    argv = [
        sys.executable,
        "main.py",
        backend,
        str(size),
        "-q",
        "bench",
        "--url",
        url,
        "--allow",
        "bench",
        "--log-level",
        "WARNING",
        *(["--slots", str(SETTINGS["slots"])] if SETTINGS["slots"] > 1 else []),
    ]
    return subprocess.Popen(argv, cwd=str(ROOT), env=worker_env(url), start_new_session=True)


def children_of(pid: int) -> List[int]:
    import psutil

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = [c.pid for c in psutil.Process(pid).children()]
        if found:
            return found
        time.sleep(0.05)
    return []


def commandstats(client: redis.Redis) -> Dict[str, Tuple[int, int]]:
    stats = client.info("commandstats")
    return {name[len("cmdstat_") :]: (v["calls"], v["usec"]) for name, v in stats.items()}


def monitor_one_job(url: str, backend: str) -> List[str]:
    """The commands Redis sees while one child runs 20 jobs (MONITOR), for one job."""
    client = redis.Redis.from_url(url)
    client.flushall()
    fill(url, 20)
    lines: List[str] = []
    stop = threading.Event()

    def listen() -> None:
        with client.monitor() as monitor:
            for event in monitor.listen():
                lines.append(
                    f"{event['client_address']}:{event['client_port']} {event['command'][:160]}"
                )
                if stop.is_set():
                    return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    time.sleep(0.3)
    worker = start_worker(url, backend, 1)
    deadline = time.monotonic() + 20
    while int(client.get(COUNTER) or 0) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1.5)  # one supervisor tick at least
    stop.set()
    client.ping()
    kill_group(worker.pid)
    worker.wait(5)
    return lines


def cpu_per_job(server: PrivateRedis, backend: str, size: int, jobs: int) -> Dict[str, float]:
    """CPU seconds (user + system) per job of each process, over the jobs between the 500th
    and the last: where a 2-core machine's budget goes, whatever else runs on it."""
    import psutil

    client = redis.Redis.from_url(server.url)
    client.flushall()
    fill(server.url, jobs)
    worker = start_worker(server.url, backend, size)
    try:
        procs = {
            "redis-server": psutil.Process(server.process.pid),
            "supervisor": psutil.Process(worker.pid),
        }
        process_children = backend in ("forking", "multiprocessing")
        for i, pid in enumerate(children_of(worker.pid) if process_children else []):
            procs[f"child{i}"] = psutil.Process(pid)
        while int(client.get(COUNTER) or 0) < 500:
            time.sleep(0.002)

        def cpu() -> Dict[str, float]:
            return {n: sum(p.cpu_times()[:2]) for n, p in procs.items()}

        before, count0, t0 = cpu(), int(client.get(COUNTER)), time.perf_counter()
        while int(client.get(COUNTER) or 0) < jobs:
            time.sleep(0.01)
        after, count1, t1 = cpu(), int(client.get(COUNTER)), time.perf_counter()
    finally:
        kill_group(worker.pid)
        worker.wait(5)
    done = count1 - count0
    result = {n: (after[n] - before[n]) / done * 1e6 for n in procs}
    result["wall_us_per_job"] = (t1 - t0) / done * 1e6
    print(f"\nCPU per job ({backend} {size}, {done} jobs, {done / (t1 - t0):,.0f} jobs/s):")
    for name, usec in result.items():
        print(f"  {name:16} {usec:7.1f} usec")
    return result


def collapse(path: Path) -> Tuple[collections.Counter, collections.Counter, int]:
    """Self and cumulative sample counts per function from py-spy's raw (collapsed) output."""
    own: collections.Counter = collections.Counter()
    total: collections.Counter = collections.Counter()
    samples = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        samples += n
        frames = [
            f.split(" (")[0]
            + " ("
            + f.split(" (")[1].split(":")[0].replace(str(ROOT) + "/", "")
            + ")"
            if " (" in f
            else f
            for f in stack.split(";")
        ]
        own[frames[-1]] += n
        for frame in set(frames):
            total[frame] += n
    return own, total, samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="forking")
    parser.add_argument("--size", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=40000)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "profile"))
    parser.add_argument(
        "--cpu-only",
        action="store_true",
        help="sample only threads on the CPU (for threading/gevent: one "
        "process whose idle slots would swamp the profile)",
    )
    parser.add_argument("--slots", type=int, default=1, help="--slots of the worker")
    parser.add_argument("--task", default="noop", choices=["noop", "sleep10", "asleep10"])
    args = parser.parse_args()
    SETTINGS.update(task=args.task, slots=args.slots)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    server = PrivateRedis().start()
    report: Dict[str, object] = {}
    try:
        url = server.url
        client = redis.Redis.from_url(url)
        report["cpu_us_per_job"] = cpu_per_job(server, args.backend, args.size, args.jobs // 2)
        lines = monitor_one_job(url, args.backend)
        (out / "monitor.txt").write_text("\n".join(lines) + "\n")
        print(
            f"MONITOR: {len(lines)} commands for 20 jobs (+ start-up and ticks); "
            f"see {out / 'monitor.txt'}"
        )

        client.flushall()
        fill(url, args.jobs)
        before = commandstats(client)
        worker = start_worker(url, args.backend, args.size)
        kids = children_of(worker.pid) if args.backend in ("forking", "multiprocessing") else []
        while int(client.get(COUNTER) or 0) < 200:
            time.sleep(0.005)
        spies = []
        targets = [("supervisor", worker.pid)] + [
            (f"child{i}", pid) for i, pid in enumerate(kids[:1])
        ]
        for name, pid in targets:
            spies.append(
                (
                    name,
                    subprocess.Popen(
                        [
                            PYSPY,
                            "record",
                            "-p",
                            str(pid),
                            "-d",
                            str(int(args.seconds)),
                            "-r",
                            "250",
                            *([] if args.cpu_only else ["--idle"]),
                            "-f",
                            "raw",
                            "-o",
                            str(out / f"{name}.txt"),
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    ),
                )
            )
        count0, t0 = int(client.get(COUNTER) or 0), time.perf_counter()
        for _, spy in spies:
            spy.wait(args.seconds + 30)
        count1, t1 = int(client.get(COUNTER) or 0), time.perf_counter()
        after = commandstats(client)
        kill_group(worker.pid)
        worker.wait(5)
        jobs = count1 - count0
        print(
            f"\n{args.backend} {args.size}: {jobs} jobs in {t1 - t0:.2f} s while profiled: "
            f"{jobs / (t1 - t0):,.0f} jobs/s (py-spy slows it)"
        )
        done = int(client.get(COUNTER) or 0)
        print(
            f"\nRedis commands per job over the whole drain ({done} jobs; inner Lua calls "
            "included; usec = Redis CPU):"
        )
        rows = []
        for name, (calls, usec) in after.items():
            calls0, usec0 = before.get(name, (0, 0))
            if calls - calls0 > 0:
                rows.append((name, (calls - calls0) / done, (usec - usec0) / done))
        rows.sort(key=lambda r: -r[2])
        for name, calls, usec in rows:
            print(f"  {name:22} {calls:7.3f} calls/job  {usec:7.1f} usec/job")
        report["commands_per_job"] = rows
        print(
            "  (evalsha's usec include the commands its script calls, which are listed too;"
            " get: the driver polling the counter)"
        )
        for name, _ in targets:
            own, total, samples = collapse(out / f"{name}.txt")
            kind = "on-CPU only" if args.cpu_only else "wall clock, idle included"
            print(f"\n{name}: {samples} samples ({kind})")
            print("  most samples, self:")
            for frame, n in own.most_common(14):
                print(f"    {100 * n / samples:5.1f}%  {frame}")
            print("  most samples, cumulative:")
            for frame, n in total.most_common(28):
                print(f"    {100 * n / samples:5.1f}%  {frame}")
            report[name] = {
                "samples": samples,
                "self": own.most_common(30),
                "cumulative": total.most_common(60),
            }
        (out / "report.json").write_text(json.dumps(report, indent=1))
    finally:
        server.stop()


if __name__ == "__main__":
    os.environ.pop("REDIS_URL", None)
    main()
