"""The chaos run: workers of every backend behind a breakable proxy and a seeded fault driver
that logs what each fault struck (the audit, tests/chaos/audit.py, checks the run against it).

Three Redis roles:
- the queue's Redis (append-only, fsync on every write): restarted by the driver;
- the proxy in front of it: the only way workers and the producer reach it, cut, stalled
  or made to lose replies by the driver;
- a recording Redis that nothing faults: each execution of a job RPUSHes there
  (tests/chaos/jobs.py), so the record survives every fault it audits.
The driver's own reads (event tailing, progress, the audit) go to the queue's Redis directly.
Some workers run with a wall clock that is off by far more than the lease (clock_skew).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional

import redis

from rqconc import Queue, Retry
from rqconc.store import scripts
from tests.chaos.records import EventTail, FaultRecord, Violations, wait_until
from tests.chaos.workers import LEASE_SECONDS, QUEUE, ChaosWorker, alive, runs_async_jobs
from tests.support.clock import install_clock
from tests.support.redis_server import RedisServer
from tests.support.tcp_proxy import TcpProxy

__all__ = ["ENDED", "FAULTS", "LEASE_SECONDS", "QUEUE", "Chaos", "FaultRecord"]

# (backend, size, seconds its clock is off at the start): one ahead, one behind, by far
# more than the lease; the clock_skew fault changes them as it goes.
WORKERS = [
    ("forking", 2, 0.0),
    ("threading", 4, 3600.0),
    ("gevent", 8, 0.0),
    ("multiprocessing", 2, -5 * LEASE_SECONDS),
    ("asyncio", 4, 0.0),
]
FAULTS = {  # fault -> relative weight
    "kill_child": 24,
    "kill_supervisor": 12,
    "warm_shutdown": 12,
    "cold_shutdown": 12,
    "cold_shutdown_async": 8,
    "redis_restart": 10,
    "proxy_drop": 15,
    "proxy_stall": 15,
    "reply_cut": 15,
    "clock_skew": 6,
}
# Faults that may explain no repeated run at all (tests/chaos/audit.py says why).
EXPLAIN_NOTHING = {"reply_cut", "clock_skew"}
# The Lua step each EVALSHA or FCALL runs, to name what a cut reply belonged to.
LUA_DIR = Path(scripts.__file__).parent / "lua"
SHAS = {scripts.script(path.stem).sha.encode(): path.stem for path in LUA_DIR.glob("*.lua")}
SHAS.update(  # the single enqueue has no function: EVALSHA everywhere (store/functions.py)
    {
        function.encode(): path.stem
        for path in LUA_DIR.glob("*.lua")
        if (function := scripts.script(path.stem).function)
    }
)
ENDED = {"finished", "failed", "canceled"}


class Chaos:
    def __init__(self, jobs: int, seed: int, redis_binary: str, tmp: Path) -> None:
        self.jobs, self.seed, self.tmp = jobs, seed, tmp
        self.rng = random.Random(seed)
        self.server = RedisServer(redis_binary, appendonly=True).start()
        self.recorder = RedisServer(redis_binary).start()
        self.proxy = TcpProxy(self.server.port).start()
        self.clock = install_clock(tmp / "clock")
        self.direct = redis.Redis.from_url(
            self.server.url, socket_timeout=10, socket_connect_timeout=2
        )
        self.record = self.recorder.client()
        self.keys = Queue(QUEUE, connection=self.direct).keys
        # The producer goes through the proxy: its enqueues lose replies too.
        self.producer = Queue(QUEUE, connection=self.proxy.url())
        self.workers = [
            ChaosWorker(b, n, self.proxy.url(), tmp, self.clock, skew) for b, n, skew in WORKERS
        ]
        self.faults: List[FaultRecord] = []
        self.violations = Violations()
        self.ids: List[str] = []
        self.tokens: Dict[str, str] = {}
        self.enqueue_done = threading.Event()
        self.events = EventTail(self.server.url, self.keys.events)
        # Enqueue over a period the driver spends injecting faults, so that they keep hitting
        # running jobs, not a drained queue; a short run's (make test's) come closer together.
        self.enqueue_seconds = max(20.0, jobs / 15.0)
        self.gaps = (0.8, 2.5) if jobs >= 5000 else (0.3, 1.0)

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
        started = time.monotonic()
        for index in range(self.jobs):
            token = f"t{index:05d}"
            job_id = f"chaos-{self.seed}-{index:05d}"
            self._enqueue_one(job_id, token)
            self.ids.append(job_id)
            self.tokens[job_id] = token
            # Spread over enqueue_seconds, or until the driver's first round of faults (each
            # kind once: the first len(FAULTS) it logs) ends as projected, if that is later.
            elapsed, done = time.monotonic() - started, len(self.faults)
            end = max(self.enqueue_seconds, elapsed * len(FAULTS) / done if done else 0.0)
            time.sleep(max(0.0, end - elapsed) / (self.jobs - index))
        self.enqueue_done.set()

    def _enqueue_one(self, job_id: str, token: str) -> None:
        # Lost replies happen (Redis SIGKILLed mid-call, a reply cut): retry with the same id,
        # and read "already exists" as "the first try went through" - never a second job.
        while True:
            # One job in two is `async def`, whose cold shutdown cancels its task: it must
            # go back unattempted as a plain one does (issue 31).
            func = "record_async" if int(token[1:]) % 2 else "record"
            try:
                self.producer.enqueue(
                    f"tests.chaos.jobs:{func}",
                    self.recorder.url,
                    token,
                    job_id=job_id,
                    result_ttl=-1,
                    retry=Retry(max=7, backoff=0.2, factor=1.5, max_delay=2),
                )
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
        while first or not self.enqueue_done.is_set():
            time.sleep(self.rng.uniform(*self.gaps))
            kind = first.pop() if first else self.rng.choices(kinds, weights)[0]
            record = FaultRecord(kind, time.monotonic(), number=len(self.faults) + 1)
            getattr(self, kind)(record)
            self.faults.append(record)
            print(
                f"fault {record.number:3d} {kind:16s} recovery "
                f"{'-' if record.recovery is None else f'{record.recovery:.2f}s'} "
                f"{record.note}{'' if record.hit else ' (hit nothing)'}",
                flush=True,
            )

    def _pick(self, process_only: bool = False) -> ChaosWorker:
        pool = [
            w
            for w in self.workers
            if w.running() and (not process_only or w.backend in ("forking", "multiprocessing"))
        ]
        return self.rng.choice(pool)

    def kill_child(self, record: FaultRecord) -> None:
        worker = self._pick(process_only=True)
        before: List[int] = []
        # A worker just restarted may not have forked yet: a kill of nothing is no fault.
        wait_until(lambda: before.extend(worker.children()) or before, 5)
        if not before:
            record.note = f"{worker.name}: no child to kill"
            return
        victim = self.rng.choice(before)
        record.at, record.wall = time.monotonic(), time.time()
        os.kill(victim, signal.SIGKILL)
        record.victims, record.struck, record.hit = {victim}, time.time(), True
        record.note = f"{worker.name} child {victim}"
        if wait_until(
            lambda: len(worker.children()) >= worker.size and victim not in worker.children(), 15
        ):
            record.recovery = time.monotonic() - record.at
        else:
            self.violations.add(f"{worker.name}: child {victim} not replaced within 15 s")

    def kill_supervisor(self, record: FaultRecord) -> None:
        worker = self._pick()
        children = worker.children()
        record.wall = time.time()
        os.kill(worker.pid, signal.SIGKILL)
        record.victims, record.hit = {worker.pid, *children}, True
        worker.wait(5)
        record.note = f"{worker.name} (children {children})"
        # SPEC: children never outlive their supervisor (gone within 1 s; 3 s of slack for
        # a loaded 2-core machine).
        if not wait_until(lambda: not any(alive(p) for p in children), 3):
            survivors = [p for p in children if alive(p)]
            self.violations.add(
                f"{worker.name}: children {survivors} outlived their SIGKILLed supervisor by 3 s"
            )
            for pid in survivors:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        record.struck = time.time()
        self._restart(worker, record)

    def warm_shutdown(self, record: FaultRecord, worker: Optional[ChaosWorker] = None) -> None:
        worker = worker or self._pick()
        children = worker.children()
        worker.process.send_signal(signal.SIGTERM)
        record.hit = True
        code = worker.wait(20)
        record.note = f"{worker.name} exit {code}"
        if code is None:
            self.violations.add(f"{worker.name}: warm shutdown did not end within 20 s")
            record.victims = {worker.pid, *children}  # killed: their jobs may run again
            worker.kill_all()
            record.struck = time.time()
        elif code != 0:
            self.violations.add(f"{worker.name}: warm shutdown exited {code}, not 0")
        self._restart(worker, record)

    def cold_shutdown(self, record: FaultRecord, worker: Optional[ChaosWorker] = None) -> None:
        worker = worker or self._pick()
        record.victims, record.hit = {worker.pid, *worker.children()}, True
        record.wall = time.time()
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
        record.struck = time.time()
        self._restart(worker, record)

    def cold_shutdown_async(self, record: FaultRecord) -> None:
        # The asyncio worker cold-stopped while it runs `async def` jobs: their tasks are
        # cancelled at an await and each job goes back unattempted, as a plain one does.
        worker = next(w for w in self.workers if w.backend == "asyncio")
        if not worker.running():
            record.note = f"{worker.name}: not running"
            return
        seen = wait_until(lambda: runs_async_jobs(self.direct, self.keys, worker), 5)
        record.at = time.monotonic()  # recovery counts from the signal, not the wait
        self.cold_shutdown(record, worker)
        record.note += "" if seen else " (no async def job seen running)"

    def _restart(self, worker: ChaosWorker, record: FaultRecord) -> None:
        worker.start()
        if wait_until(lambda: self.registered(worker), 30):
            record.recovery = time.monotonic() - record.at
        else:
            self.violations.add(f"{worker.name} did not register within 30 s of its restart")

    def redis_restart(self, record: FaultRecord) -> None:
        # SIGKILL, not a clean stop: with appendfsync always nothing acknowledged is lost.
        began = time.time()
        record.hit = self.server.process is not None and self.server.process.poll() is None
        self.server.kill()
        time.sleep(self.rng.uniform(0.1, 1.5))
        self.server.start()
        record.window = (began, time.time())  # until it answers again, AOF loaded
        record.note = f"SIGKILL + restart (AOF), down {record.window[1] - began:.1f}s"
        self._measure_progress(record)

    def proxy_drop(self, record: FaultRecord) -> None:
        seconds = self.rng.uniform(0.5, 3.0)
        record.hit = self.proxy.connections > 0
        began = time.time()
        self.proxy.drop(seconds)
        record.note = f"{seconds:.1f}s"
        time.sleep(seconds)
        record.window = (began, time.time())
        self._measure_progress(record)

    def proxy_stall(self, record: FaultRecord) -> None:
        # Longer than the 2 s lease half of the time: the jobs then held look abandoned and
        # are re-run elsewhere (counted as lost leases), the case fencing tokens exist for.
        seconds = self.rng.uniform(0.5, 4.0)
        record.hit = self.proxy.connections > 0
        began = time.time()
        self.proxy.stall(seconds)
        record.note = f"{seconds:.1f}s"
        time.sleep(seconds)
        record.window = (began, time.time())
        self._measure_progress(record)

    def reply_cut(self, record: FaultRecord) -> None:
        # Each request is forwarded and runs; for a moment a share of them lose their reply
        # (the connection closes instead), on whichever connection they come: takes,
        # completions, renewals, enqueues, heartbeats. New connections pass throughout.
        seconds, share = self.rng.uniform(0.5, 2.0), self.rng.uniform(0.1, 0.3)
        began, before = time.time(), len(self.proxy.cuts)
        self.proxy.cut_replies(seconds, share, self.rng.randrange(2**32))
        time.sleep(seconds + 0.3)  # and the replies of requests doomed at the very end
        cuts = self.proxy.cuts[before:]
        record.cutting = (began, max([began + seconds] + [at for at, _ in cuts]))
        record.cut_steps = Counter(step_name(request) for _, request in cuts)
        record.hit = bool(cuts)
        steps = ", ".join(f"{name} {n}" for name, n in record.cut_steps.most_common())
        record.note = f"{seconds:.1f}s at {share:.0%}: {len(cuts)} replies cut ({steps})"
        self._measure_progress(record)

    def clock_skew(self, record: FaultRecord) -> None:
        # A warm restart with a clock now off by 6 s to 2 h either way (a quarter of the
        # time, a skewed clock is set right): leases are on Redis' clock, so nothing may
        # come of it but the restart.
        worker = self._pick()
        old = worker.skew
        if old and self.rng.random() < 0.25:
            worker.skew = 0.0
        else:
            worker.skew = self.rng.choice((-1, 1)) * self.rng.uniform(3 * LEASE_SECONDS, 7200)
        self.warm_shutdown(record, worker)
        record.note = f"clock {old:+.0f} s -> {worker.skew:+.0f} s; {record.note}"

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
        if self.enqueue_done.is_set() and self._finished_count() == len(self.ids):
            record.note += " (nothing left to run)"
            return
        if wait_until(lambda: self._finished_count() > baseline[0], 45):
            record.recovery = time.monotonic() - lifted
        else:
            self.violations.add(
                f"{record.kind}: no job finished within 45 s after "
                f"the fault was lifted at {lifted - record.at:.1f}s"
            )

    # ---- the end ----
    def statuses(self) -> Dict[str, Optional[str]]:
        pipe = self.direct.pipeline(transaction=False)
        for job_id in self.ids:
            pipe.hget(self.keys.job(job_id), "status")
        return {job_id: (s.decode() if s else None) for job_id, s in zip(self.ids, pipe.execute())}

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


def step_name(request: bytes) -> str:
    """The command a request (RESP, its first bytes) starts with; for EVALSHA and FCALL, the
    step."""
    parts = request.split(b"\r\n")
    if len(parts) < 3:
        return "?"
    command = parts[2].upper()
    if command in (b"EVALSHA", b"FCALL") and len(parts) > 4:
        return SHAS.get(parts[4], command.decode().lower())
    return command.decode(errors="replace").lower()
