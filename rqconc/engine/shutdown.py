"""The supervisor's controls: what each signal (or `stop()`) means, and the shutdown state
machine (running → stopping → stopped; warm, then cold after a second signal or the
shutdown timeout).

Signal handlers only record the signal; the loop dispatches each to one `handle_*` method
(gunicorn's arbiter is the model), so no handler runs in the middle of a loop step.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import Callable, Iterable, List, Optional, Union

from rqconc.engine.pool import Pool
from rqconc.engine.slots import SlotTable
from rqconc.engine.source import WorkSource
from rqconc.engine.states import SupervisorState

log = logging.getLogger("rqconc.engine")

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU)
EXIT_WARM, EXIT_COLD, EXIT_BOOT_FAILURE = 0, 1, 3
WARM, COLD = "warm", "cold"


class Controls:
    """Signal handling and shutdown, for `BaseSupervisor`."""

    # Set up by BaseSupervisor.
    state: SupervisorState
    source: WorkSource
    shutdown_timeout: Optional[float]
    boot_error: Optional[str]
    _requests: List[Union[int, str]]
    _pool: Pool
    _slots: SlotTable
    _target: int
    _cold: bool
    _stop_started: float
    _live_cells: Callable[[], Iterable[int]]
    _cells_of: Callable[[int], range]

    def stop(self, graceful: bool = True) -> None:
        """Ask for a warm (graceful) or a cold shutdown; see `join()` to wait for it."""
        self._requests.append(WARM if graceful else COLD)
        self._while_exiting()

    def _signalled(self, signum: int) -> None:
        """The signal handler: records the signal for the loop (see the module's doc)."""
        self._requests.append(signum)
        if signum in (signal.SIGINT, signal.SIGTERM):
            self._while_exiting()

    def _mark_stopped(self) -> None:
        """The loop is over; a stop request it left undispatched counts as one that came
        while the source waits."""
        self.state = SupervisorState.STOPPED
        if any(r in (signal.SIGINT, signal.SIGTERM, WARM, COLD) for r in self._requests):
            self.source.stop_waiting()

    def _while_exiting(self) -> None:
        # Past the loop no request is dispatched any more, but the source may still wait
        # (for Redis to record the jobs a cold shutdown interrupted): a stop request
        # then means "leave now", as SPEC 2 promises an exit within 1 s of a cold one.
        if self.state is SupervisorState.STOPPED:
            self.source.stop_waiting()

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

    def _stopped(self) -> bool:
        """While stopping: whether every child is gone; turns cold once the shutdown
        timeout has passed."""
        if not self._pool.live():
            return True
        if (
            self.shutdown_timeout is not None
            and time.monotonic() - self._stop_started > self.shutdown_timeout
        ):
            log.warning("shutdown timeout of %ss expired: cold shutdown", self.shutdown_timeout)
            self.handle_cold()
        return False

    def _exit_code(self) -> int:
        if self.boot_error:
            return EXIT_BOOT_FAILURE
        return EXIT_COLD if self._cold else EXIT_WARM

    # ---- one method per signal ----
    def handle_term(self) -> None:
        """First INT/TERM: warm shutdown; a second one while stopping: cold."""
        if self.state is SupervisorState.STOPPING:
            self.handle_cold()
            return
        log.info("warm shutdown: idle children end now, busy ones after their job")
        self.state = SupervisorState.STOPPING
        self._stop_started = time.monotonic()
        for index in self._live_cells():
            # A child in the middle of a take is retired, not ended: it may hold an item.
            self._slots.end_when_idle(index)

    def handle_cold(self) -> None:
        """End every child at once; their items go back to the source."""
        log.warning("cold shutdown: ending every child now")
        self._cold = True
        if self.state is not SupervisorState.STOPPING:
            self._stop_started = time.monotonic()
        self.state = SupervisorState.STOPPING
        # Take every slot first: from then on no child can add a claim, so the claims read
        # here are all the items the children may hold when they are ended.
        views = [self._slots.mark_gone(i) for i in self._live_cells()]
        self._pool.end_all()
        claims = [claim for v in views for claim in v.claims]
        if claims:
            self.source.interrupted(claims)

    def handle_hup(self) -> None:
        """Replace every child gracefully (new children load code afresh)."""
        log.info("SIGHUP: replacing all children")
        for index in self._live_cells():
            self._slots.end_when_idle(index)

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
                    for cell in self._cells_of(index):
                        self._slots.end_when_idle(cell)
