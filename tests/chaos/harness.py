"""The chaos run: workers of every backend behind a breakable proxy, a seeded fault driver,
and the audit that proves nothing was lost.

Three Redis roles:
- the queue's Redis (append-only, fsync on every write): restarted by the driver;
- the proxy in front of it: the only way workers reach it, cut or stalled by the driver;
- a recording Redis that nothing faults: each execution of a job RPUSHes there
  (tests/chaos/jobs.py), so the record survives every fault it audits.
The driver itself (enqueueing, event tailing, the audit) talks to the queue's Redis directly.
"""
from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

import psutil
import redis

from rqconc import Queue, Retry
from tests.support.redis_server import RedisServer
from tests.support.tcp_proxy import TcpProxy
from tests.support.worker_process import ROOT

QUEUE = "chaos"
WORKERS = [("forking", 2), ("threading", 4), ("gevent", 8), ("multiprocessing", 2)]
LEASE_SECONDS = 2
FAULTS = {  # fault -> relative weight
    "kill_child": 24, "kill_supervisor": 12, "warm_shutdown": 12, "cold_shutdown": 12,
    "redis_restart": 10, "proxy_drop": 15, "proxy_stall": 15,
}
ENDED = {"finished", "failed", "canceled"}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class ChaosWorker:
    """One worker slot: a `python main.py BACKEND SIZE` process, restarted by the driver."""

    def __init__(self, backend: str, size: int, url: str, log_dir: Path) -> None:
        self.backend, self.size, self.url = backend, size, url
        self.log_path = log_dir / f"worker-{backend}.log"
        self.incarnation = 0
        self.process: Optional[subprocess.Popen] = None
        self.exit_codes: List[int] = []

    @property
    def name(self) -> str:
        return f"chaos-{self.backend}-{self.incarnation}"

    def start(self) -> None:
        self.incarnation += 1
        with open(self.log_path, "ab") as log:
            log.write(f"==== incarnation {self.incarnation}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                [sys.executable, str(ROOT / "main.py"), self.backend, str(self.size),
                 "--url", self.url, "-q", QUEUE, "--allow", "tests",
                 "--lease-seconds", str(LEASE_SECONDS), "--name", self.name,
                 "--log-level", "INFO"],
                cwd=ROOT, stdout=log, stderr=log, start_new_session=True)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def children(self) -> List[int]:
        try:
            kids = psutil.Process(self.pid).children()
        except psutil.NoSuchProcess:
            return []
        pids = []
        for kid in kids:
            try:
                if "resource_tracker" in " ".join(kid.cmdline()):
                    continue  # multiprocessing's helper, not a worker child
                if kid.status() != psutil.STATUS_ZOMBIE:
                    pids.append(kid.pid)
            except psutil.Error:
                continue
        return pids

    def wait(self, timeout: float) -> Optional[int]:
        assert self.process is not None
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.exit_codes.append(code)
        return code

    def kill_all(self) -> None:
        """SIGKILL the supervisor and anything it left (test clean-up only)."""
        if self.process is None:
            return
        try:
            kids = psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            kids = []
        for kid in kids:
            try:
                kid.kill()
            except psutil.Error:
                pass
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass
class FaultRecord:
    kind: str
    at: float
    wall: float = field(default_factory=time.time)
    recovery: Optional[float] = None
    note: str = ""


@dataclass
class Violations:
    items: List[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        print("VIOLATION:", text, flush=True)
        self.items.append(text)


def wait_until(condition: Callable[[], object], timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except (redis.exceptions.RedisError, psutil.Error, OSError):
            pass
        time.sleep(interval)
    return False


class EventTail(threading.Thread):
    """Reads the job event stream continuously (it is capped, a long run would outgrow it)
    and counts, per job, the events the audit needs (`interrupted`, `started`, ...)."""

    def __init__(self, url: str, key: str) -> None:
        super().__init__(daemon=True, name="event-tail")
        self.url, self.key = url, key
        self.counts: Dict[str, Counter] = defaultdict(Counter)
        self.last_id = "0-0"
        self.stopping = threading.Event()

    def run(self) -> None:
        client = redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=2)
        while True:
            try:
                entries = client.xread({self.key: self.last_id}, count=5000)
            except redis.exceptions.RedisError:
                time.sleep(0.1)
                continue
            got = 0
            for _key, messages in entries or []:
                for entry_id, fields in messages:
                    self.last_id = entry_id.decode()
                    event = fields.get(b"event", b"").decode()
                    job_id = fields.get(b"job_id", b"").decode()
                    self.counts[job_id][event] += 1
                    got += 1
            if not got:
                if self.stopping.is_set():
                    return
                time.sleep(0.2)


class Chaos:
    def __init__(self, jobs: int, seed: int, redis_binary: str, tmp: Path) -> None:
        self.jobs, self.seed, self.tmp = jobs, seed, tmp
        self.rng = random.Random(seed)
        self.server = RedisServer(redis_binary, appendonly=True).start()
        self.recorder = RedisServer(redis_binary).start()
        self.proxy = TcpProxy(self.server.port).start()
        self.direct = redis.Redis.from_url(self.server.url, socket_timeout=10,
                                           socket_connect_timeout=2)
        self.record = self.recorder.client()
        self.queue = Queue(QUEUE, connection=self.direct)
        self.keys = self.queue.keys
        self.workers = [ChaosWorker(b, n, self.proxy.url(), tmp) for b, n in WORKERS]
        self.faults: List[FaultRecord] = []
        self.violations = Violations()
        self.ids: List[str] = []
        self.tokens: Dict[str, str] = {}
        self.enqueue_done = threading.Event()
        self.events = EventTail(self.server.url, self.keys.events)
        # Enqueue over a period the driver spends injecting faults, so that faults keep
        # hitting running jobs rather than an already drained queue.
        self.enqueue_seconds = max(30.0, jobs / 15.0)

    # ---- set-up / tear-down ----
    def start(self) -> None:
        for worker in self.workers:
            worker.start()
        self.events.start()
        for worker in self.workers:
            if not wait_until(lambda w=worker: self.registered(w), 30):
                raise AssertionError(f"{worker.name} did not start:\n{worker.output()[-3000:]}")

    def close(self) -> None:
        for worker in self.workers:
            worker.kill_all()
        self.proxy.close()
        self.events.stopping.set()
        self.server.close()
        self.recorder.close()

    def registered(self, worker: ChaosWorker) -> bool:
        return bool(self.direct.exists(self.keys.worker(worker.name)))

    # ---- enqueueing (direct, idempotent through explicit job ids) ----
    def enqueue_all(self) -> None:
        interval = self.enqueue_seconds / self.jobs
        started = time.monotonic()
        for index in range(self.jobs):
            token = f"t{index:05d}"
            job_id = f"chaos-{self.seed}-{index:05d}"
            self._enqueue_one(job_id, token)
            self.ids.append(job_id)
            self.tokens[job_id] = token
            delay = started + (index + 1) * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        self.enqueue_done.set()

    def _enqueue_one(self, job_id: str, token: str) -> None:
        # Lost replies happen (Redis SIGKILLed mid-call): retry with the same id, and read
        # "already exists" as "the first try went through" - never a second job.
        while True:
            try:
                self.queue.enqueue("tests.chaos.jobs:record", self.recorder.url, token,
                                   job_id=job_id, result_ttl=-1,
                                   retry=Retry(max=7, backoff=0.2, factor=1.5, max_delay=2))
                return
            except ValueError as exc:
                if "already exists" in str(exc):
                    return
                raise
            except ConnectionError:
                time.sleep(0.05)

    # ---- the fault driver ----
    def drive(self) -> None:
        kinds = list(FAULTS)
        weights = [FAULTS[k] for k in kinds]
        # Every kind once first (in a seeded order), so even the short run injects them all.
        first = self.rng.sample(kinds, len(kinds))
        while not self.enqueue_done.is_set():
            time.sleep(self.rng.uniform(0.8, 2.5))
            kind = first.pop() if first else self.rng.choices(kinds, weights)[0]
            record = FaultRecord(kind, time.monotonic())
            getattr(self, kind)(record)
            self.faults.append(record)
            print(f"fault {len(self.faults):3d} {kind:16s} recovery "
                  f"{'-' if record.recovery is None else f'{record.recovery:.2f}s'} "
                  f"{record.note}", flush=True)

    def _pick(self, process_only: bool = False) -> ChaosWorker:
        pool = [w for w in self.workers if w.running()
                and (not process_only or w.backend in ("forking", "multiprocessing"))]
        return self.rng.choice(pool)

    def kill_child(self, record: FaultRecord) -> None:
        worker = self._pick(process_only=True)
        before = worker.children()
        if not before:
            record.note = f"{worker.name}: no child to kill"
            return
        victim = self.rng.choice(before)
        os.kill(victim, signal.SIGKILL)
        record.note = f"{worker.name} child {victim}"
        if wait_until(lambda: len(worker.children()) >= worker.size
                      and victim not in worker.children(), 15):
            record.recovery = time.monotonic() - record.at
        else:
            self.violations.add(f"{worker.name}: child {victim} not replaced within 15 s")

    def kill_supervisor(self, record: FaultRecord) -> None:
        worker = self._pick()
        children = worker.children()
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(5)
        record.note = f"{worker.name} (children {children})"
        # SPEC: children never outlive their supervisor (gone within 1 s; 3 s of slack for
        # a loaded 2-core machine).
        if not wait_until(lambda: not any(_alive(p) for p in children), 3):
            survivors = [p for p in children if _alive(p)]
            self.violations.add(f"{worker.name}: children {survivors} outlived their "
                                "SIGKILLed supervisor by 3 s")
            for pid in survivors:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._restart(worker, record)

    def warm_shutdown(self, record: FaultRecord) -> None:
        worker = self._pick()
        worker.process.send_signal(signal.SIGTERM)
        code = worker.wait(20)
        record.note = f"{worker.name} exit {code}"
        if code is None:
            self.violations.add(f"{worker.name}: warm shutdown did not end within 20 s")
            worker.kill_all()
        elif code != 0:
            self.violations.add(f"{worker.name}: warm shutdown exited {code}, not 0")
        self._restart(worker, record)

    def cold_shutdown(self, record: FaultRecord) -> None:
        worker = self._pick()
        worker.process.send_signal(signal.SIGTERM)
        time.sleep(self.rng.uniform(0.0, 0.05))
        worker.process.send_signal(signal.SIGTERM)
        code = worker.wait(10)
        record.note = f"{worker.name} exit {code}"
        if code is None:
            self.violations.add(f"{worker.name}: cold shutdown did not end within 10 s")
            worker.kill_all()
        elif code not in (0, 1):  # 0 when it was all idle and gone before the second signal
            self.violations.add(f"{worker.name}: cold shutdown exited {code}")
        self._restart(worker, record)

    def _restart(self, worker: ChaosWorker, record: FaultRecord) -> None:
        worker.start()
        if wait_until(lambda: self.registered(worker), 30):
            record.recovery = time.monotonic() - record.at
        else:
            self.violations.add(f"{worker.name} did not register within 30 s of its restart")

    def redis_restart(self, record: FaultRecord) -> None:
        # SIGKILL, not a clean stop: with appendfsync always nothing acknowledged is lost.
        self.server.kill()
        time.sleep(self.rng.uniform(0.1, 1.5))
        self.server.start()
        record.note = "SIGKILL + restart (AOF)"
        self._measure_progress(record)

    def proxy_drop(self, record: FaultRecord) -> None:
        seconds = self.rng.uniform(0.5, 3.0)
        self.proxy.drop(seconds)
        record.note = f"{seconds:.1f}s"
        time.sleep(seconds)
        self._measure_progress(record)

    def proxy_stall(self, record: FaultRecord) -> None:
        # Longer than the 2 s lease half of the time: the jobs then held look abandoned and
        # are re-run elsewhere (counted as lost leases), the case fencing tokens exist for.
        seconds = self.rng.uniform(0.5, 4.0)
        self.proxy.stall(seconds)
        record.note = f"{seconds:.1f}s"
        time.sleep(seconds)
        self._measure_progress(record)

    def _finished_count(self) -> int:
        return int(self.direct.zcard(self.keys.finished(QUEUE)))

    def _measure_progress(self, record: FaultRecord) -> None:
        """Recovery of a Redis or network fault: from the moment it is lifted (Redis is up
        again, the proxy passes again) until a job finishes after that."""
        lifted = time.monotonic()
        baseline: List[int] = []
        wait_until(lambda: baseline.append(self._finished_count()) or True, 10)
        if not baseline:
            self.violations.add(f"{record.kind}: Redis unreachable 10 s after the fault")
            return
        if self.enqueue_done.is_set() and not self._pending():
            record.note += " (nothing left to run)"
            return
        if wait_until(lambda: self._finished_count() > baseline[0], 45):
            record.recovery = time.monotonic() - lifted
        else:
            self.violations.add(f"{record.kind}: no job finished within 45 s after "
                                f"the fault was lifted at {lifted - record.at:.1f}s")

    def _pending(self) -> int:
        return len(self.ids) - self._finished_count()

    # ---- the end ----
    def statuses(self) -> Dict[str, Optional[str]]:
        pipe = self.direct.pipeline(transaction=False)
        for job_id in self.ids:
            pipe.hget(self.keys.job(job_id), "status")
        return {job_id: (s.decode() if s else None)
                for job_id, s in zip(self.ids, pipe.execute())}

    def wait_all_ended(self, timeout: float) -> Dict[str, Optional[str]]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                statuses = self.statuses()
            except redis.exceptions.RedisError:
                statuses = {}
            if statuses and all(s in ENDED for s in statuses.values()):
                return statuses
            if time.monotonic() > deadline:
                return statuses or self.statuses()
            time.sleep(0.2)


@dataclass
class Audit:
    statuses: Counter
    lost: List[str]
    unended: Dict[str, Optional[str]]
    dead: Dict[str, str]
    unexplained_dead: List[str]
    duplicates: Dict[str, dict]
    unexplained_duplicates: List[str]
    finished_unrecorded: List[str]
    wrong_results: List[str]


def audit(chaos: Chaos, statuses: Dict[str, Optional[str]]) -> Audit:
    """Check the record against Redis: every job accounted for, duplicates explained."""
    direct, keys = chaos.direct, chaos.keys
    pipe = direct.pipeline(transaction=False)
    for job_id in chaos.ids:
        pipe.hmget(keys.job(job_id), ["attempts", "lost", "exc_type", "exc_message", "result"])
    fields = dict(zip(chaos.ids, pipe.execute()))
    rpipe = chaos.record.pipeline(transaction=False)
    for job_id in chaos.ids:
        rpipe.lrange(f"executions:{chaos.tokens[job_id]}", 0, -1)
    executions = dict(zip(chaos.ids, rpipe.execute()))
    dead_letters = {i.decode() for i in direct.zrange(keys.failed(QUEUE), 0, -1)}
    chaos.events.stopping.set()
    chaos.events.join(30)

    result = Audit(Counter(statuses.values()), [], {}, {}, [], {}, [], [], [])
    for job_id in chaos.ids:
        status = statuses.get(job_id)
        attempts, lost, exc_type, exc_message, value = fields[job_id]
        if status is None:
            result.lost.append(job_id)
            continue
        if status not in ENDED:
            result.unended[job_id] = status
        runs = len(executions[job_id])
        attempts_n, lost_n = int(attempts or 0), int(lost or 0)
        interrupted = chaos.events.counts[job_id]["interrupted"]
        if status == "finished":
            if runs == 0:
                result.finished_unrecorded.append(job_id)
            if value is None or chaos.tokens[job_id] not in value.decode(errors="replace"):
                result.wrong_results.append(job_id)
        if status == "failed":
            reason = f"{(exc_type or b'').decode()}: {(exc_message or b'').decode()}"
            result.dead[job_id] = reason
            # The only reason this job may fail: its worker vanished too often.
            if job_id not in dead_letters or "WorkerLost" not in reason:
                result.unexplained_dead.append(job_id)
        if runs > 1:
            # Each execution beyond the first must be paid for by an ended attempt (a child
            # lost mid-job, a lease lost with its worker) or a cold-shutdown interruption.
            starts = sorted(float(r.split()[1]) for r in executions[job_id])
            info = {"runs": runs, "attempts": attempts_n, "lost": lost_n,
                    "interrupted": interrupted, "status": status, "starts": starts}
            result.duplicates[job_id] = info
            if runs > attempts_n + interrupted or (attempts_n <= 1 and lost_n == 0
                                                   and interrupted == 0):
                result.unexplained_duplicates.append(job_id)
    return result


def fault_table(chaos: Chaos, result: Audit) -> str:
    """Markdown: per fault kind, how often, lost jobs, duplicates, recovery median/max."""
    by_kind: Dict[str, List[FaultRecord]] = defaultdict(list)
    for record in chaos.faults:
        by_kind[record.kind].append(record)
    # Each extra execution is charged to the latest fault injected before the run it
    # repeats could have ended (a run lasts <= 0.3 s): the fault that cut it short, or the
    # stall / outage during which it started on a lease that then expired.
    charged: Counter = Counter()
    walls = sorted((r.wall, r.kind) for r in chaos.faults)
    for info in result.duplicates.values():
        for start in info["starts"][:-1]:
            before = [kind for wall, kind in walls if wall <= start + 0.35]
            charged[before[-1] if before else "(none)"] += 1
    lines = ["| fault | injected | jobs lost | duplicate runs | recovery median | recovery max |",
             "|---|---:|---:|---:|---:|---:|"]
    for kind in FAULTS:
        records = by_kind.get(kind, [])
        times = [r.recovery for r in records if r.recovery is not None]
        median = f"{statistics.median(times):.2f} s" if times else "-"
        worst = f"{max(times):.2f} s" if times else "-"
        lines.append(f"| {kind} | {len(records)} | {len(result.lost)} | {charged.get(kind, 0)} | "
                     f"{median} | {worst} |")
    if charged.get("(none)"):
        lines.append(f"| (no fault after the run) | - | - | {charged['(none)']} | - | - |")
    dup_runs = sum(d["runs"] - 1 for d in result.duplicates.values())
    by_interrupt = sum(1 for d in result.duplicates.values() if d["interrupted"])
    by_lost = sum(1 for d in result.duplicates.values() if d["lost"])
    by_worker_lost = sum(1 for d in result.duplicates.values()
                         if d["attempts"] > 1 and not d["lost"] and not d["interrupted"])
    lines += [
        "",
        f"Jobs: {len(chaos.ids)} enqueued; statuses {dict(result.statuses)}; "
        f"lost {len(result.lost)}; dead letters {len(result.dead)}.",
        f"Duplicate executions: {dup_runs} extra runs over {len(result.duplicates)} jobs "
        f"(jobs whose runs include a cold-shutdown interruption: {by_interrupt}; a lease "
        f"lost with its worker or partition: {by_lost}; only a child killed mid-job "
        f"(WorkerLost): {by_worker_lost}); unexplained: "
        f"{len(result.unexplained_duplicates)}.",
    ]
    return "\n".join(lines)
