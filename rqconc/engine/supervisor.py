"""The supervisor: spawns `size` children up front, watches them, replaces the dead, and shuts
them down.

It holds its parts, each made with what it needs: the fleet (fleet.py: the pool, the
idle/busy table, how many children it wants), the controls (controls.py: what each signal
means, the shutdown state machine), the reaper (reaper.py: children that ended by
themselves), the duties (duties.py: deadlines, renewal, cancel, memory, suspend) and, for
`burst`, the burst's end (burst.py). The loop below is the whole life of a supervisor, read
top to bottom as gunicorn's arbiter is: signal handlers only record the signal, and each loop
step dispatches what was recorded to a `handle_*` method of the controls.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Type, Union

from rqconc.engine import titles
from rqconc.engine.backends import pool_class
from rqconc.engine.burst import BurstEnd
from rqconc.engine.child import ChildContext
from rqconc.engine.controls import HANDLED_SIGNALS, Controls
from rqconc.engine.duties import Duties
from rqconc.engine.fake_source import FakeSource
from rqconc.engine.fleet import Fleet
from rqconc.engine.pool import Pool
from rqconc.engine.reaper import Reaper
from rqconc.engine.renewer import Renewer
from rqconc.engine.source import SupervisorInfo, WorkSource, WorkTotals
from rqconc.engine.states import ChildState, SupervisorState

log = logging.getLogger("rqconc.engine")

LOOP_INTERVAL = 0.05
# A burst worker looks for its end this often (a round trip while no child is busy), not
# only once a tick: a burst of quick jobs then exits when drained, not up to a second later.
BURST_PROBE_INTERVAL = 0.1
# The process title is refreshed at most this often (counting the cells is cheap, but a
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


class BaseSupervisor:
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
        chosen = pool_class(backend)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size must be an integer >= 1, not {size!r}")
        self.slots_per_child = check_slots(slots, chosen)
        chosen.check_usable()
        self.source = source = source if source is not None else FakeSource()
        self.backend, self.size, self.burst = chosen.name, size, burst
        self.uid = uuid.uuid4().hex[:10]
        self.name = name or f"{socket.gethostname()}.{os.getpid()}.{self.uid[:4]}"
        self.shutdown_timeout = shutdown_timeout
        self.max_jobs_per_child = max_jobs_per_child
        self.max_memory_per_child = max_memory_per_child
        self.take_timeout = take_timeout
        self.preload = tuple(preload)
        self.on_tick = on_tick
        self.fleet = Fleet(chosen, size, self.slots_per_child)
        self.controls = Controls(self.fleet, source, shutdown_timeout)
        self.reaper = Reaper(self.fleet, source, self.controls)
        self.duties = Duties(self.fleet, source, max_memory_per_child)
        self.burst_end = BurstEnd(self.fleet, source, self.controls) if burst else None
        self.exit_code: Optional[int] = None
        self._thread: Optional[threading.Thread] = None
        self._renewer: Optional[Renewer] = None

    @property
    def state(self) -> SupervisorState:
        return self.controls.state

    @property
    def boot_error(self) -> Optional[str]:
        """Why a child failed while starting (the worker then stopped), or None."""
        return self.controls.boot_error

    @property
    def suspended(self) -> bool:
        return self.duties.suspended

    # ---- public controls ----
    def run(self) -> int:
        """Serve in the foreground with signal handlers installed; returns the exit code."""
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError(
                "Supervisor.run() installs signal handlers and must be called "
                "from the main thread; use start() to embed it"
            )
        pool = self._open()
        previous = {s: pool.install_signal(s, self.controls.signalled) for s in HANDLED_SIGNALS}
        try:
            return self._serve()
        finally:
            for signum, handler in previous.items():
                pool.restore_signal(signum, handler)

    def start(self) -> BaseSupervisor:
        """Serve in the background (no signal handlers); returns at once."""
        self._open()
        self._thread = threading.Thread(target=self._serve, name="rqconc-supervisor", daemon=True)
        self._thread.start()
        return self

    def stop(self, graceful: bool = True) -> None:
        """Ask for a warm (graceful) or a cold shutdown; see `join()` to wait for it."""
        self.controls.stop(graceful)

    def join(self, timeout: Optional[float] = None) -> Optional[int]:
        """Wait for a supervisor started with `start()`; returns its exit code."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.exit_code

    @property
    def children(self) -> List[ChildSnapshot]:
        """One snapshot per child; with `slots` > 1, one per slot (index: the slot's number
        across the worker, child * slots + slot; pid: its child's)."""
        # Read without the cells' locks: this may run in any thread, while the loop frees
        # the lock of a cell whose child died (see CellMemory.prepare).
        views = sorted(self.fleet.peek_live(), key=lambda view: view.index)
        return [
            ChildSnapshot(
                view.index,
                view.state.label,
                view.item_id or None,
                view.pid or self.fleet.pool.pid(view.index // self.slots_per_child),
                view.jobs_done,
            )
            for view in views
        ]

    # ---- the loop ----
    def _open(self) -> Pool:
        if self.state is not SupervisorState.READY or self.fleet.is_open:
            raise RuntimeError(f"a supervisor runs once; this one is {self.state}")
        return self.fleet.open()

    def _serve(self) -> int:
        self.controls.state = SupervisorState.RUNNING
        log.info(
            "supervisor %s started: backend=%s size=%d pid=%d",
            self.name,
            self.backend,
            self.size,
            os.getpid(),
        )
        if self.max_memory_per_child and not self.fleet.pool.children_are_processes:
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
        pool = self.fleet.pool
        if pool.is_green:
            self._renewer = Renewer(self.fleet.table, self.source, self.source.renew_interval())
            self._renewer.start(pool.start_os_thread, pool.make_os_lock)

    def _loop(self) -> None:
        next_tick = next_renew = next_title = next_probe = 0.0
        controls, duties = self.controls, self.duties
        tick_interval = self.source.tick_interval()
        while True:
            controls.dispatch()
            controls.follow_stop_request()
            self.reaper.reap()
            if controls.state is SupervisorState.RUNNING:
                self._fill()
            duties.enforce_deadlines()
            now = time.monotonic()
            if now >= next_title:
                next_title = now + TITLE_INTERVAL
                self._show_title()
            if now >= next_renew and self._renewer is None:
                next_renew = now + self.source.renew_interval()
                duties.renew()
            if now >= next_tick:
                next_tick = now + tick_interval
                self._tick()
            if self.burst_end is not None:
                if now >= next_probe:
                    next_probe = now + BURST_PROBE_INTERVAL
                    self.burst_end.consider()
                self.burst_end.check()
            if controls.state is SupervisorState.STOPPING and controls.stopped():
                return
            self.fleet.pool.sleep(LOOP_INTERVAL)

    def _tick(self) -> None:
        """Every `source.tick_interval()` (a second for Redis): what needs Redis (or any source)
        rather than the table."""
        self.duties.follow_suspend()
        self.duties.stop_canceled()
        self.duties.recycle_fat_children()
        self.source.tick(self.info())
        if self.on_tick is not None:
            self.on_tick(self)

    def _finish(self) -> None:
        pool = self.fleet.pool
        if pool.live():
            self.controls.handle_cold()
        self.controls.mark_stopped()
        if self._renewer is not None:
            self._renewer.stop()
        if self.exit_code is None:
            self.exit_code = self.controls.exit_code()
        try:
            self.source.supervisor_stopped(self.info())
        finally:
            pool.close()
        log.info("supervisor %s stopped (exit code %d)", self.name, self.exit_code)

    def _fill(self) -> None:
        """Spawn a child in every place below the target that has none (the dead are
        replaced here)."""
        if self.boot_error:
            return
        fleet = self.fleet
        live = fleet.pool.live()
        for index in range(fleet.target):
            if index not in live:
                self._spawn(index)
        if self.slots_per_child > 1:
            # Cells taken back from a live child (a timed-out or canceled job's thread was
            # abandoned): prepared again, the child's host starts a new thread in each.
            for cell in fleet.table.empty(fleet.live_cells()):
                generation = fleet.table.prepare(cell)
                pid = fleet.pool.pid(cell // self.slots_per_child)
                if pid:
                    fleet.table.set_pid(cell, generation, pid)

    def _spawn(self, index: int) -> None:
        table, pool = self.fleet.table, self.fleet.pool
        cells = self.fleet.cells_of(index)
        generations = tuple(table.prepare(cell) for cell in cells)
        ctx = ChildContext(
            index=index,
            generation=generations[0],
            table=table,
            source=self.source,
            uid=self.uid,
            supervisor_pid=os.getpid(),
            take_timeout=self.take_timeout,
            max_jobs=self.max_jobs_per_child,
            preload=self.preload,
            is_os_process=pool.children_are_processes,
            slots_per_child=self.slots_per_child,
            generations=generations if self.slots_per_child > 1 else (),
        )
        pool.spawn(ctx)
        pid = pool.pid(index)
        if pid:
            for cell, cell_generation in zip(cells, generations):
                table.set_pid(cell, cell_generation, pid)

    def _show_title(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # embedded with start(): the host process keeps its own title
        counts = self.fleet.count()
        titles.show_supervisor(
            self.backend,
            self.fleet.target,
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
        views = self.fleet.peek_live()
        busy = [v for v in views if v.state is ChildState.BUSY]
        return SupervisorInfo(
            name=self.name,
            uid=self.uid,
            pid=os.getpid(),
            host=socket.gethostname(),
            backend=self.backend,
            size=self.fleet.target,
            state=self.state.value,
            busy=len(busy),
            idle=sum(v.state.waits_for_work for v in views),
            current_items=[v.item_id for v in busy],
            suspended=self.suspended,
            loop_tick=max((v.loop_tick for v in views), default=0.0),
            children=[(v.index, v.state.label, v.item_id, v.pid) for v in views],
            slots=self.slots_per_child,
            totals=self.fleet.table.work_totals() if self.fleet.is_open else WorkTotals(),
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
