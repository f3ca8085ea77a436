"""The supervisor: spawns `size` children up front, watches them, and shuts them down.

States: ready → running → stopping → stopped. What signals mean and how a shutdown goes is
in shutdown.py; the periodic duties (deadlines, renewal, cancel, burst) in duties.py.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Sequence, Type, Union

from rqconc.engine import titles
from rqconc.engine.backends import pool_class
from rqconc.engine.child import ChildContext
from rqconc.engine.duties import Duties
from rqconc.engine.fake_source import FakeSource
from rqconc.engine.pool import Ended, Pool
from rqconc.engine.renewer import Renewer
from rqconc.engine.shutdown import HANDLED_SIGNALS, Controls
from rqconc.engine.slots import SlotView
from rqconc.engine.source import SupervisorInfo, WorkSource
from rqconc.engine.states import ChildState, SupervisorState

log = logging.getLogger("rqconc.engine")

LOOP_INTERVAL = 0.05
TICK_INTERVAL = 1.0
# The process title is refreshed at most this often (counting the slots is cheap, but a
# title that changes 20 times a second helps nobody).
TITLE_INTERVAL = 0.25


@dataclass(frozen=True)
class ChildSnapshot:
    """What `Supervisor.children` tells about one child."""

    index: int
    state: str
    job_id: Optional[str]
    pid: Optional[int]
    jobs_done: int


class BaseSupervisor(Controls, Duties):
    """Runs `size` children of one backend that take work from `source`."""

    # Shown in the process title; a source-aware subclass names its queues here.
    queues: Sequence[str] = ()

    def __init__(
        self,
        backend: Union[str, Type[Pool]] = "forking",
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
        slots: int = 1,
    ) -> None:
        self._pool_class = pool_class(backend) if isinstance(backend, str) else backend
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be an integer >= 1, not {size!r}")
        self.slots_per_child = check_slots(slots, self._pool_class)
        self._pool_class.check_usable()
        if source is None:
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
        self._init_run_state()

    def _init_run_state(self) -> None:
        """What changes while the supervisor runs (the settings above do not)."""
        self.state = SupervisorState.READY
        self.exit_code: Optional[int] = None
        self.boot_error: Optional[str] = None
        self.suspended = False
        self._requests: List[Union[int, str]] = []
        self._has_pool = False  # `_pool` is set once run() or start() made it
        self._thread: Optional[threading.Thread] = None
        self._cold = False
        self._stop_started = 0.0
        self._burst_probe = False
        self._renewer: Optional[Renewer] = None

    # ---- public controls ----
    def run(self) -> int:
        """Serve in the foreground with signal handlers installed; returns the exit code."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                "Supervisor.run() installs signal handlers and must be called "
                "from the main thread; use start() to embed it"
            )
        self._pool = self._make_pool()
        previous = {s: self._pool.install_signal(s, self._signalled) for s in HANDLED_SIGNALS}
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

    def join(self, timeout: Optional[float] = None) -> Optional[int]:
        """Wait for a supervisor started with `start()`; returns its exit code."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.exit_code

    @property
    def children(self) -> List[ChildSnapshot]:
        """One snapshot per child; with `slots` > 1, one per slot (index: the slot's number
        across the worker, child * slots + slot; pid: its child's)."""
        if not self._has_pool:
            return []
        snapshots = []
        # Read without the slots' locks: this may run in any thread, while the loop frees
        # the lock of a slot whose child died (see SlotTable.prepare).
        for index in sorted(self._live_cells()):
            view = self._slots.peek(index)
            snapshots.append(
                ChildSnapshot(
                    index,
                    view.state.label,
                    view.item_id or None,
                    view.pid or self._pool.pid(index // self.slots_per_child),
                    view.jobs_done,
                )
            )
        return snapshots

    def _cells_of(self, index: int) -> range:
        """The slots (cells of the slot table) of the child in `index`."""
        first = index * self.slots_per_child
        return range(first, first + self.slots_per_child)

    def _live_cells(self) -> Iterable[int]:
        """The slots of every live child (with one slot per child: the children)."""
        if self.slots_per_child == 1:
            return self._pool.live()
        return [cell for index in self._pool.live() for cell in self._cells_of(index)]

    # ---- the loop ----
    def _make_pool(self) -> Pool:
        if self.state is not SupervisorState.READY:
            raise RuntimeError(f"a supervisor runs once; this one is {self.state}")
        # Room to grow with SIGTTIN without reallocating shared memory.
        capacity = max(self.size * 4, self.size + 16)
        if self.slots_per_child == 1:
            pool = self._pool_class(capacity)
        else:
            pool = self._pool_class(capacity, self.slots_per_child)
        self._slots = pool.make_slots()
        self._target = self.size
        self._has_pool = True
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
            self._start_renewer()
            self._fill()
            self._loop()
        finally:
            self._finish()
        assert self.exit_code is not None  # _finish sets it
        return self.exit_code

    def _start_renewer(self) -> None:
        """Where a job can freeze this loop (a greenlet that does not yield), leases are
        renewed from an OS thread instead (renewer.py)."""
        if self._pool.is_green:
            self._renewer = Renewer(self._slots, self.source, self.source.renew_interval())
            self._renewer.start(self._pool.start_os_thread, self._pool.make_os_lock)

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
            if now >= next_renew and self._renewer is None:
                next_renew = now + self.source.renew_interval()
                self._renew()
            if now >= next_tick:
                next_tick = now + TICK_INTERVAL
                self._tick()
            if self._burst_probe and self.state is SupervisorState.RUNNING:
                self._check_burst()
            if self.state is SupervisorState.STOPPING and self._stopped():
                return
            self._pool.sleep(LOOP_INTERVAL)

    def _finish(self) -> None:
        if self._pool.live():
            self.handle_cold()
        self._mark_stopped()
        if self._renewer is not None:
            self._renewer.stop()
        if self.exit_code is None:
            self.exit_code = self._exit_code()
        try:
            self.source.supervisor_stopped(self.info())
        finally:
            self._pool.close()
        log.info("supervisor %s stopped (exit code %d)", self.name, self.exit_code)

    def _fill(self) -> None:
        if self.boot_error:
            return
        live = self._pool.live()
        for index in range(self._target):
            if index not in live:
                self._spawn(index)
        if self.slots_per_child > 1:
            # Slots taken back from a live child (a timed-out or canceled job's thread was
            # abandoned): prepared again, the child's host starts a new thread in each.
            for cell in self._slots.empty(self._live_cells()):
                generation = self._slots.prepare(cell)
                pid = self._pool.pid(cell // self.slots_per_child)
                if pid:
                    self._slots.set_pid(cell, generation, pid)

    def _spawn(self, index: int) -> None:
        cells = self._cells_of(index)
        generations = tuple(self._slots.prepare(cell) for cell in cells)
        generation = generations[0]
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
            is_os_process=self._pool.children_are_processes,
            slots_per_child=self.slots_per_child,
            generations=generations if self.slots_per_child > 1 else (),
        )
        self._pool.spawn(ctx)
        pid = self._pool.pid(index)
        if pid:
            for cell, cell_generation in zip(cells, generations):
                self._slots.set_pid(cell, cell_generation, pid)

    def _reap(self) -> None:
        for ended in self._pool.reap():
            if self.slots_per_child > 1:
                self._account_slots(ended)
                continue
            view = self._slots.mark_dead(ended.index)
            if view.generation == ended.generation:
                self._account(view, ended)

    def _account_slots(self, ended: Ended) -> None:
        """A child with several slots is gone by itself: each slot's job is settled as a
        child's would be (a busy slot's a failed attempt, a take's goes back), with one line
        for the child rather than one per slot."""
        views = [self._slots.mark_dead(cell) for cell in self._cells_of(ended.index)]
        if views[0].state is ChildState.BOOT_FAILED:
            self._account(views[0], ended)
            return
        busy = [v for v in views if v.state is ChildState.BUSY]
        reason = f"child {ended.index} died mid-job ({ended.description})"
        if busy:
            log.warning("%s; its %d running jobs are failed attempts", reason, len(busy))
        for view in busy:
            self.source.lost(view.claim, reason)
        pending = [c for v in views for c in (v.claims if v not in busy else [v.next_claim])]
        if any(pending):
            self.source.interrupted([c for c in pending if c])
        # A child that recycled itself (SIGHUP, max jobs, abandoned threads) exits 0, maybe
        # with a slot prepared again that it no longer started: nothing unexpected.
        quiet = (ChildState.EXITED, ChildState.ENDING, ChildState.EMPTY)
        if not busy and ended.exitcode and any(v.state not in quiet for v in views):
            log.warning("child %d ended unexpectedly (%s)", ended.index, ended.description)

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

    def _show_title(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # embedded with start(): the host process keeps its own title
        counts = self._slots.count(self._live_cells())
        titles.show_supervisor(
            self.backend,
            self._target,
            self.queues,
            busy=counts.busy,
            idle=counts.taking + counts.idle,  # waiting in a take is idle to an operator
            name=self.name,
            state=self.state.value,
            suspended=self.suspended,
            slots=self.slots_per_child,
        )

    def info(self) -> SupervisorInfo:
        # Published for operators (heartbeat, status): read without locks.
        views = [self._slots.peek(i) for i in self._live_cells()] if self._has_pool else []
        busy = [v for v in views if v.state is ChildState.BUSY]
        return SupervisorInfo(
            name=self.name,
            uid=self.uid,
            pid=os.getpid(),
            host=socket.gethostname(),
            backend=self.backend,
            size=self._target if self._has_pool else self.size,
            state=self.state.value,
            busy=len(busy),
            idle=sum(v.state.waits_for_work for v in views),
            current_items=[v.item_id for v in busy],
            suspended=self.suspended,
            loop_tick=max((v.loop_tick for v in views), default=0.0),
            children=[(v.index, v.state.label, v.item_id, v.pid) for v in views],
            slots=self.slots_per_child,
        )


def check_slots(slots: int, pool: Type[Pool]) -> int:
    """`slots` (jobs at once per child) as given, or ValueError saying what is wrong."""
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise ValueError(f"slots must be an integer >= 1, not {slots!r}")
    if slots > 1 and not pool.children_are_processes:
        raise ValueError(
            f"slots apply to the process backends (forking, multiprocessing), not {pool.name}: "
            f"its children run one job each; raise the size instead"
        )
    return slots
