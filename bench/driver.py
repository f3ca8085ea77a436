"""One measurement of one system, run by that system's Python (rqconc's .venv or
bench/.peers-venv), printing one JSON object as its last line of output.

    python -m bench.driver SYSTEM WORKLOAD --url URL [--mode MODE] [--jobs N] [--timeout S]

Workloads:
  throughput  --task noop|sleep10: FLUSHALL, queue N jobs (the system's fastest way), then
              start the workers; the clock runs from the first moment the counter is seen
              above 0 (the first job has run) until it reaches N: enqueue time and worker
              start-up are both excluded, for every system alike.
              -> {"rate": jobs/s, "seconds", "counted_jobs"}
  enqueue     --batch 0: N calls of the single enqueue API; --batch 1: the batch API.
              No worker runs. -> {"rate"} or {"na": reason}
  aenqueue    --coroutines C (100): N jobs enqueued by C coroutines of one process, each
              awaiting one enqueue at a time (the system's asyncio API; rqconc.aio's
              AsyncQueue). No worker runs. -> {"rate"} or {"na": reason}
  latency     start the workers, wait until a warm-up job has run, then send N stamp jobs
              one at a time: t0 = time.time() just before the enqueue call, the job pushes
              time.time() as its first statement, the driver BLPOPs it; the next job is
              sent 5 ms after the previous one started, so the worker is idle again.
              -> {"median_ms", "p99_ms", "max_ms"}
  backlog     (rqconc) FLUSHALL, queue --queued jobs, start the workers, time the first
              --window completions as in throughput; --runs times (a backlog under 100,000
              is queued afresh for each run, a bigger one once).
              -> {"rates": [...]}
  memory      (rqconc) `forking 4` after 2,000 no-op jobs: RSS and USS (psutil) of the
              supervisor and of each child. -> {"supervisor": {...}, "children": [...]}
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import struct
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import redis

from bench.common import COUNTER, ROOT, STARTS, Timeout, Workers, wait_count, worker_env

LATENCY_GAP = 0.005


def _relative(argv: List[str]) -> str:
    """A worker command line as RESULTS.md shows it: paths relative to the repository."""
    shown = []
    for arg in argv:
        if arg.startswith(str(ROOT) + os.sep):
            arg = os.path.relpath(arg, ROOT)
        shown.append(arg)
    return " ".join(shown)


def distinct_resident_mb(pids: List[int]) -> Any:
    """The physical memory the processes occupy together, each page once: the union of the
    frames of their resident pages (/proc/PID/pagemap). A sum of RSS counts every page a
    forked child still shares with its supervisor once per process. None where the frame
    numbers are hidden (they need root)."""
    page = os.sysconf("SC_PAGE_SIZE")
    frames = set()
    for pid in pids:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for line in maps:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                try:
                    pagemap.seek(start // page * 8)
                    entries = pagemap.read((end - start) // page * 8)
                except (OSError, OverflowError):  # [vsyscall] lies beyond what pagemap maps
                    continue
                for (entry,) in struct.iter_unpack("<Q", entries[: len(entries) // 8 * 8]):
                    if entry >> 63:  # present in RAM; bits 0-54 are the frame number
                        frames.add(entry & ((1 << 55) - 1))
    if not frames or frames == {0}:
        return None
    return len(frames) * page / 2**20


class Driver:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        os.environ["BENCH_REDIS_URL"] = args.url
        self.peer = importlib.import_module(f"bench.peers.{args.system}")
        self.client = redis.Redis.from_url(args.url)
        self.deadline = time.monotonic() + args.timeout
        self.workers = Workers(args.pidfile)
        self.python = sys.executable

    def start_workers(self, mode: str) -> List[str]:
        env = worker_env(self.args.url)
        commands = self.peer.workers(mode, self.python)
        log = None
        if self.args.logdir:
            Path(self.args.logdir).mkdir(parents=True, exist_ok=True)
            log = str(
                Path(self.args.logdir) / f"{self.args.system}-{self.args.workload}-"
                f"{mode.replace(':', '_')}.log"
            )
        for argv in commands:
            self.workers.start(argv, env, log)
        return [_relative(argv) for argv in commands]

    def throughput(self) -> Dict[str, Any]:
        n = self.args.jobs
        self.client.flushall()
        self.peer.fill(self.args.task, n)
        commands = self.start_workers(self.args.mode)
        t_first, count_first, t_done = wait_count(self.client, n, self.deadline, self.workers)
        counted = n - count_first
        seconds = t_done - t_first
        self.workers.kill()
        done = int(self.client.get(COUNTER) or 0)
        if done != n:  # a duplicate run would inflate the count: refuse the measurement
            raise RuntimeError(f"{done} completions counted for {n} jobs")
        return {
            "rate": counted / seconds,
            "seconds": seconds,
            "counted_jobs": counted,
            "jobs": n,
            "commands": commands,
        }

    def enqueue(self) -> Dict[str, Any]:
        n = self.args.jobs
        self.client.flushall()
        kind = "noop"
        if self.args.batch:
            if getattr(self.peer, "BATCH_API", None) is None:
                return {"na": "no batch enqueue API"}
            # Connect and warm up outside the clock, as for single calls: a row of a few
            # thousand jobs lasts tens of ms, of which a first call's set-up (a connection,
            # a script's load, lazy imports) would otherwise be a fifth.
            self.peer.enqueue_batch(kind, 10)
            self.client.flushall()
            began = time.perf_counter()
            self.peer.enqueue_batch(kind, n)
        else:
            self.peer.enqueue(kind)  # connect and warm up outside the clock
            self.client.flushall()
            began = time.perf_counter()
            for _ in range(n):
                self.peer.enqueue(kind)
        seconds = time.perf_counter() - began
        return {
            "rate": n / seconds,
            "seconds": seconds,
            "jobs": n,
            "api": self.peer.BATCH_API if self.args.batch else "single",
        }

    def aenqueue(self) -> Dict[str, Any]:
        if getattr(self.peer, "enqueue_concurrently", None) is None:
            return {"na": "no asyncio enqueue API"}
        self.client.flushall()
        n, coroutines = self.args.jobs, self.args.coroutines
        seconds = self.peer.enqueue_concurrently("noop", n, coroutines)
        return {"rate": n / seconds, "seconds": seconds, "jobs": n, "coroutines": coroutines}

    def latency(self) -> Dict[str, Any]:
        self.client.flushall()
        commands = self.start_workers(self.args.mode)
        for _ in range(5):  # the first one waits for start-up; the others warm caches
            self.peer.enqueue("stamp")
            if (
                self.client.blpop([STARTS], timeout=max(1, self.deadline - time.monotonic()))
                is None
            ):
                raise Timeout("the worker did not start a warm-up job in time")
            self.workers.check_alive()
        time.sleep(0.2)
        latencies = []
        for _ in range(self.args.jobs):
            t0 = time.time()
            self.peer.enqueue("stamp")
            reply = self.client.blpop([STARTS], timeout=max(1, self.deadline - time.monotonic()))
            if reply is None:
                raise Timeout(f"{len(latencies)} of {self.args.jobs} latency jobs started")
            latencies.append((float(reply[1]) - t0) * 1000)
            time.sleep(LATENCY_GAP)
        self.workers.kill()
        latencies.sort()
        return {
            "median_ms": statistics.median(latencies),
            "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
            "max_ms": latencies[-1],
            "jobs": len(latencies),
            "commands": commands,
        }

    def backlog(self) -> Dict[str, Any]:
        queued, window = self.args.queued, self.args.jobs
        # A small backlog is queued afresh for every run (a run drains it); a big one once,
        # as the runs take only a sliver of it.
        refill = queued < 100_000
        rates, commands, fill_seconds = [], [], 0.0
        for run in range(self.args.runs):
            if refill or run == 0:
                self.client.flushall()
                fill_seconds = self.fill_backlog(queued)
            self.client.set(COUNTER, 0)
            commands = self.start_workers(self.args.mode)
            t_first, count_first, t_done = wait_count(
                self.client, window, self.deadline, self.workers
            )
            rates.append((window - count_first) / (t_done - t_first))
            self.workers.kill()
        return {
            "rates": rates,
            "queued": queued,
            "window": window,
            "fill_seconds": fill_seconds,
            "commands": commands,
        }

    def fill_backlog(self, queued: int) -> float:
        began = time.perf_counter()
        if queued >= 100_000:  # the Python side of enqueue is the bottleneck: use both cores
            import multiprocessing

            with multiprocessing.get_context("fork").Pool(2) as pool:
                pool.starmap(
                    self.peer.fill, [("noop", queued // 2), ("noop", queued - queued // 2)]
                )
        else:
            self.peer.fill("noop", queued)
        return time.perf_counter() - began

    def memory(self) -> Dict[str, Any]:
        import psutil

        n = 2000
        self.client.flushall()
        self.peer.fill("noop", n)
        commands = self.start_workers(self.args.mode)
        wait_count(self.client, n, self.deadline, self.workers)
        time.sleep(1.0)  # let the children settle into their idle wait
        supervisor = psutil.Process(self.workers.processes[0].pid)

        def usage(process: psutil.Process) -> Dict[str, float]:
            info = process.memory_full_info()
            return {
                "pid": process.pid,
                "rss_mb": info.rss / 2**20,
                "uss_mb": info.uss / 2**20,
                "pss_mb": getattr(info, "pss", 0) / 2**20,
            }

        children = supervisor.children(recursive=True)
        result = {
            "supervisor": usage(supervisor),
            "children": [usage(c) for c in children],
            "distinct_mb": distinct_resident_mb([supervisor.pid] + [c.pid for c in children]),
            "commands": commands,
        }
        self.workers.kill()
        return result

    def run(self) -> Dict[str, Any]:
        try:
            return getattr(self, self.args.workload)()
        finally:
            self.workers.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("system")
    parser.add_argument(
        "workload", choices=["throughput", "enqueue", "aenqueue", "latency", "backlog", "memory"]
    )
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", default="")
    parser.add_argument("--task", default="noop", choices=["noop", "sleep10", "asleep10"])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--queued", type=int, default=1000)
    parser.add_argument("--coroutines", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--pidfile", default=None)
    parser.add_argument("--logdir", default=None)
    args = parser.parse_args()
    try:
        result = Driver(args).run()
    except Timeout as exc:
        result = {"error": f"timeout ({args.timeout:g} s): {exc}"}
    except Exception as exc:  # reported in the table, the run goes on with the next row
        result = {"error": f"{exc.__class__.__name__}: {exc}"}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
