"""The supervisor: spawns `size` children up front, watches them, and shuts them down.

Signal handlers only record the signal; the loop dispatches each to one `handle_*` method
(gunicorn's arbiter is the model). States: ready → running → stopping → stopped.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Union

from rqconc.engine import titles
from rqconc.engine.backends import pool_class
from rqconc.engine.child import ChildContext
from rqconc.engine.pool import Ended, Pool
from rqconc.engine.slots import SlotView
from rqconc.engine.source import SupervisorInfo, WorkSource
from rqconc.engine.states import ChildState, SupervisorState

log = logging.getLogger("rqconc.engine")

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU)
LOOP_INTERVAL = 0.05
TICK_INTERVAL = 1.0
# The process title is refreshed at most this often (counting the slots is cheap, but a
# title that changes 20 times a second helps nobody).
TITLE_INTERVAL = 0.25
EXIT_WARM, EXIT_COLD, EXIT_BOOT_FAILURE = 0, 1, 3
WARM, COLD = "warm", "cold"


@dataclass(frozen=True)
class ChildSnapshot:
    """What `Supervisor.children` tells about one child."""

    index: int
    state: str
    job_id: Optional[str]
    pid: Optional[int]
    jobs_done: int


class BaseSupervisor:
    """Runs `size` children of one backend that take work from `source`."""

    # Shown in the process title; a source-aware subclass names its queues here.
    queues: Sequence[str] = ()

    def __init__(
        self,
        backend: Union[str, type] = "forking",
        size: int = 1,
        source: Optional[WorkSource] = None,
        *,
        name: Optional[str] = None,
        shutdown_timeout: Optional[float] = None,
        max_jobs_per_child: Optional[int] = None,
        max_memory_per_child: Optional[float] = None,
        take_timeout: float = 0.25,
        preload: Sequence[str] = (),
        burst: bool = False,
        on_tick: Optional[Callable[[BaseSupervisor], None]] = None,
    ) -> None:
        self._pool_class = pool_class(backend) if isinstance(backend, str) else backend
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be an integer >= 1, not {size!r}")
        self._pool_class.check_usable()
        if source is None:
            from rqconc.engine.fake_source import FakeSource

            source = FakeSource()
        self.backend = self._pool_class.name
        self.size = size
        self.source = source
        self.uid = uuid.uuid4().hex[:10]
        self.name = name or f"{socket.gethostname()}.{os.getpid()}.{self.uid[:4]}"
        self.shutdown_timeout = shutdown_timeout
        self.max_jobs_per_child = max_jobs_per_child
        self.max_memory_per_child = max_memory_per_child
        self.take_timeout = take_timeout
        self.preload = tuple(preload)
        self.on_tick = on_tick
        self.burst = burst
        self.state = SupervisorState.READY
        self.exit_code: Optional[int] = None
        self.boot_error: Optional[str] = None
        self.suspended = False
        self._requests: List[Union[int, str]] = []
        self._pool: Optional[Pool] = None
        self._thread: Optional[threading.Thread] = None
        self._cold = False
        self._stop_started = 0.0

    # ---- public controls ----
    def run(self) -> int:
        """Serve in the foreground with signal handlers installed; returns the exit code."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                "Supervisor.run() installs signal handlers and must be called "
                "from the main thread; use start() to embed it"
            )
        self._pool = self._make_pool()
        previous = {s: self._pool.install_signal(s, self._requests.append) for s in HANDLED_SIGNALS}
        try:
            return self._serve()
        finally:
            for signum, handler in previous.items():
                self._pool.restore_signal(signum, handler)

    def start(self) -> BaseSupervisor:
        """Serve in the background (no signal handlers); returns at once."""
        self._pool = self._make_pool()
        self._thread = threading.Thread(target=self._serve, name="rqconc-supervisor", daemon=True)
        self._thread.start()
        return self

    def stop(self, graceful: bool = True) -> None:
        """Ask for a warm (graceful) or a cold shutdown; see `join()` to wait for it."""
        self._requests.append(WARM if graceful else COLD)

    def join(self, timeout: Optional[float] = None) -> Optional[int]:
        """Wait for a supervisor started with `start()`; returns its exit code."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.exit_code

    @property
    def children(self) -> List[ChildSnapshot]:
        if self._pool is None:
            return []
        snapshots = []
        # Read without the slots' locks: this may run in any thread, while the loop frees
        # the lock of a slot whose child died (see SlotTable.prepare).
        for index in sorted(self._pool.live()):
            view = self._slots.peek(index)
            snapshots.append(
                ChildSnapshot(
                    index,
                    view.state.label,
                    view.item_id or None,
                    view.pid or self._pool.pid(index),
                    view.jobs_done,
                )
            )
        return snapshots

    # ---- the loop ----
    def _make_pool(self) -> Pool:
        if self.state is not SupervisorState.READY:
            raise RuntimeError(f"a supervisor runs once; this one is {self.state}")
        # Room to grow with SIGTTIN without reallocating shared memory.
        pool = self._pool_class(max(self.size * 4, self.size + 16))
        self._slots = pool.make_slots()
        self._target = self.size
        return pool

    def _serve(self) -> int:
        self.state = SupervisorState.RUNNING
        log.info(
            "supervisor %s started: backend=%s size=%d pid=%d",
            self.name,
            self.backend,
            self.size,
            os.getpid(),
        )
        if self.max_memory_per_child and not self._pool.children_are_processes:
            log.warning(
                "--max-memory-per-child applies to process backends only; "
                "the %s backend ignores it",
                self.backend,
            )
        try:
            self.source.supervisor_started(self.info())
            self._fill()
            self._loop()
        finally:
            self._finish()
        return self.exit_code

    def _loop(self) -> None:
        next_tick = next_renew = next_title = 0.0
        while True:
            self._dispatch_requests()
            self._reap()
            if self.state is SupervisorState.RUNNING:
                self._fill()
            self._enforce_deadlines()
            now = time.monotonic()
            if now >= next_title:
                next_title = now + TITLE_INTERVAL
                self._show_title()
            if now >= next_renew:
                next_renew = now + self.source.renew_interval()
                self._renew()
            if now >= next_tick:
                next_tick = now + TICK_INTERVAL
                self._tick()
            if self.state is SupervisorState.STOPPING:
                if not self._pool.live():
                    return
                if (
                    self.shutdown_timeout is not None
                    and time.monotonic() - self._stop_started > self.shutdown_timeout
                ):
                    log.warning(
                        "shutdown timeout of %ss expired: cold shutdown", self.shutdown_timeout
                    )
                    self.handle_cold()
            self._pool.sleep(LOOP_INTERVAL)

    def _finish(self) -> None:
        if self._pool is not None and self._pool.live():
            self.handle_cold()
        self.state = SupervisorState.STOPPED
        if self.exit_code is None:
            self.exit_code = (
                EXIT_BOOT_FAILURE if self.boot_error else (EXIT_COLD if self._cold else EXIT_WARM)
            )
        try:
            self.source.supervisor_stopped(self.info())
        finally:
            self._pool.close()
        log.info("supervisor %s stopped (exit code %d)", self.name, self.exit_code)

    def _dispatch_requests(self) -> None:
        while self._requests:
            request = self._requests.pop(0)
            handler = {
                signal.SIGINT: self.handle_term,
                signal.SIGTERM: self.handle_term,
                WARM: self.handle_term,
                COLD: self.handle_cold,
                signal.SIGHUP: self.handle_hup,
                signal.SIGTTIN: self.handle_ttin,
                signal.SIGTTOU: self.handle_ttou,
            }[request]
            handler()

    # ---- one method per signal ----
    def handle_term(self) -> None:
        """First INT/TERM: warm shutdown; a second one while stopping: cold."""
        if self.state is SupervisorState.STOPPING:
            self.handle_cold()
            return
        log.info("warm shutdown: idle children end now, busy ones after their job")
        self.state = SupervisorState.STOPPING
        self._stop_started = time.monotonic()
        for index in self._pool.live():
            self._end_when_idle(index)

    def handle_cold(self) -> None:
        """End every child at once; their items go back to the source."""
        log.warning("cold shutdown: ending every child now")
        self._cold = True
        if self.state is not SupervisorState.STOPPING:
            self._stop_started = time.monotonic()
        self.state = SupervisorState.STOPPING
        # Take every slot first: from then on no child can add a claim, so the claims read
        # here are all the items the children may hold when they are ended.
        views = [self._slots.mark_gone(i) for i in self._pool.live()]
        self._pool.end_all()
        claims = [claim for v in views for claim in v.claims]
        if claims:
            self.source.interrupted(claims)

    def handle_hup(self) -> None:
        """Replace every child gracefully (new children load code afresh)."""
        log.info("SIGHUP: replacing all children")
        for index in self._pool.live():
            self._end_when_idle(index)

    def handle_ttin(self) -> None:
        if self._target < self._pool.capacity:
            self._target += 1
            log.info("SIGTTIN: %d children", self._target)

    def handle_ttou(self) -> None:
        if self._target > 1:
            self._target -= 1
            log.info("SIGTTOU: %d children", self._target)
            for index in self._pool.live():
                if index >= self._target:
                    self._end_when_idle(index)

    # ---- duties ----
    def _end_when_idle(self, index: int) -> None:
        if not self._slots.end_if_idle(index):
            self._slots.retire(index)

    def _fill(self) -> None:
        if self.boot_error:
            return
        live = self._pool.live()
        for index in range(self._target):
            if index not in live:
                self._spawn(index)

    def _spawn(self, index: int) -> None:
        generation = self._slots.prepare(index)
        ctx = ChildContext(
            index=index,
            generation=generation,
            slots=self._slots,
            source=self.source,
            uid=self.uid,
            supervisor_pid=os.getpid(),
            take_timeout=self.take_timeout,
            max_jobs=self.max_jobs_per_child,
            preload=self.preload,
            in_process=self._pool.children_are_processes,
        )
        self._pool.spawn(ctx)
        pid = self._pool.pid(index)
        if pid:
            self._slots.set_pid(index, generation, pid)

    def _reap(self) -> None:
        for ended in self._pool.reap():
            view = self._slots.mark_dead(ended.index)
            if view.generation == ended.generation:
                self._account(view, ended)

    def _account(self, view: SlotView, ended: Ended) -> None:
        if view.state is ChildState.BOOT_FAILED:
            self.boot_error = view.error
            log.error(
                "child %d failed while starting: %s; stopping the worker", view.index, view.error
            )
            if not self._cold:
                self.handle_cold()
        elif view.state is ChildState.BUSY:
            reason = f"child {view.index} died mid-job ({ended.description})"
            log.warning("%s; job %s is a failed attempt", reason, view.item_id)
            self.source.lost(view.claim, reason)
            self._release_next(view)
        elif view.claims:
            # Died while taking: whatever the take leased under this claim goes back.
            self.source.interrupted(view.claims)
        elif view.state not in (ChildState.EXITED, ChildState.ENDING):
            log.warning("child %d ended unexpectedly (%s)", view.index, ended.description)

    def _enforce_deadlines(self) -> None:
        now = time.time()
        # Every 50 ms: a scan without locks; only a slot that looks overdue is checked again
        # under its lock, and taken from its child in the same step (the child may have
        # moved on to another item meanwhile, which must not be ended for this one).
        for index in self._slots.overdue(self._pool.live(), now):
            view = self._slots.take_over_if_overdue(index, now)
            if view is None:
                continue
            log.warning("job %s overran its timeout: ending child %d", view.item_id, index)
            self._pool.end(index)
            self.source.timed_out(view.claim, view.deadline - view.busy_since)
            self._release_next(view)

    def _release_next(self, view: SlotView) -> None:
        """A busy child ended by force may already hold its next item (taken in the step
        that recorded the current one): that item goes back untouched."""
        if view.next_claim:
            self.source.interrupted([view.next_claim])

    def _show_title(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # embedded with start(): the host process keeps its own title
        busy, idle = self._slots.count(self._pool.live())
        titles.show_supervisor(
            self.backend,
            self._target,
            self.queues,
            busy=busy,
            idle=idle,
            name=self.name,
            state=self.state.value,
            suspended=self.suspended,
        )

    def _busy_views(self) -> List[SlotView]:
        # Read without locks: a claim torn by a concurrent write costs one lease renewal
        # (there are several per lease), and a cancel is re-checked under the slot's lock.
        views = (self._slots.peek(i) for i in self._pool.live())
        return [v for v in views if v.state is ChildState.BUSY]

    def _renew(self) -> None:
        claims = [claim for v in self._busy_views() for claim in v.claims]
        if claims:
            self.source.renew(claims)

    def _tick(self) -> None:
        self.suspended = bool(self.source.is_suspended())
        self._slots.set_paused(self.suspended)
        busy = self._busy_views()
        for claim in self.source.stop_requested([v.claim for v in busy]):
            self._stop_canceled(claim, busy)
        if self.max_memory_per_child and self._pool.children_are_processes:
            self._recycle_fat_children()
        self.source.tick(self.info())
        if self.burst and self.state is SupervisorState.RUNNING and self._drained():
            log.info("burst: every queue is empty and every child idle; stopping")
            self.handle_term()
        if self.on_tick is not None:
            self.on_tick(self)

    def _drained(self) -> bool:
        live = self._pool.live()
        _, idle = self._slots.count(live)
        return idle == len(live) and self.source.is_drained()

    def _stop_canceled(self, claim: str, busy: List[SlotView]) -> None:
        for seen in busy:
            if seen.claim != claim:
                continue
            # The child may have finished this item since `busy` was read: end it only if
            # it still runs it, and take its slot in the same step.
            view = self._slots.take_over_if_running(seen.index, claim)
            if view is None:
                continue
            log.info("job %s canceled: ending child %d", view.item_id, view.index)
            self._pool.end(view.index)
            self.source.canceled(claim)
            self._release_next(view)

    def _recycle_fat_children(self) -> None:
        limit = self.max_memory_per_child * 1024 * 1024
        for index in self._pool.live():
            rss = self._pool.rss_bytes(index)
            if rss is not None and rss > limit:
                log.info("child %d uses %.0f MB: recycling it after its job", index, rss / 2**20)
                self._slots.retire(index)

    def info(self) -> SupervisorInfo:
        # Published for operators (heartbeat, status): read without locks.
        views = [self._slots.peek(i) for i in self._pool.live()] if self._pool else []
        busy = [v for v in views if v.state is ChildState.BUSY]
        return SupervisorInfo(
            name=self.name,
            uid=self.uid,
            pid=os.getpid(),
            host=socket.gethostname(),
            backend=self.backend,
            size=self._target if self._pool else self.size,
            state=self.state.value,
            busy=len(busy),
            idle=sum(v.state is ChildState.IDLE for v in views),
            current_items=[v.item_id for v in busy],
            suspended=self.suspended,
            loop_tick=max((v.loop_tick for v in views), default=0.0),
            children=[(v.index, v.state.label, v.item_id, v.pid) for v in views],
        )
