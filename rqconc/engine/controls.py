"""The supervisor's controls: what each signal (or `stop()`) means, and the shutdown state
machine (ready → running → stopping → stopped; warm, then cold after a second signal, the
shutdown timeout or a child that failed to boot).

Signal handlers only record the signal; the supervisor's loop calls `dispatch()`, which hands
each recorded request to one `handle_*` method (gunicorn's arbiter is the model), so no
handler runs in the middle of a loop step.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import List, Optional, Union

from rqconc.engine.fleet import Fleet
from rqconc.engine.source import WorkSource
from rqconc.engine.states import SupervisorState

log = logging.getLogger("rqconc.engine")

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU)
EXIT_WARM, EXIT_COLD, EXIT_BOOT_FAILURE = 0, 1, 3
# source.StopWorker's default: the worker refused to serve as configured (a usage error).
EXIT_MISCONFIGURED = 2
WARM, COLD = "warm", "cold"


class Controls:
    """The state of one supervisor and the requests that change it."""

    def __init__(self, fleet: Fleet, source: WorkSource, shutdown_timeout: Optional[float]):
        self.fleet = fleet
        self.source = source
        self.shutdown_timeout = shutdown_timeout
        self.state = SupervisorState.READY
        self.boot_error: Optional[str] = None
        self.requested_exit: Optional[int] = None  # a child's StopWorker
        self.cold = False
        self._requests: List[Union[int, str]] = []
        self._stop_started = 0.0

    # ---- requests: from a signal handler or another thread; recorded, nothing more ----
    def stop(self, graceful: bool = True) -> None:
        self._requests.append(WARM if graceful else COLD)
        self._while_exiting()

    def signalled(self, signum: int) -> None:
        """The signal handler: records the signal for the loop (see the module's doc)."""
        self._requests.append(signum)
        if signum in (signal.SIGINT, signal.SIGTERM):
            self._while_exiting()

    def _while_exiting(self) -> None:
        # Past the loop no request is dispatched any more, but the source may still wait
        # (for Redis to record the jobs a cold shutdown interrupted): a stop request
        # then means "leave now", as SPEC 2 promises an exit within 1 s of a cold one.
        if self.state is SupervisorState.STOPPED:
            self.source.stop_waiting()

    # ---- the loop's side ----
    def dispatch(self) -> None:
        """Handle the requests recorded since the last call, in order."""
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

    def stopped(self) -> bool:
        """While stopping: whether every child is gone; turns cold once the shutdown
        timeout has passed."""
        if not self.fleet.pool.live():
            return True
        if (
            self.shutdown_timeout is not None
            and time.monotonic() - self._stop_started > self.shutdown_timeout
        ):
            log.warning("shutdown timeout of %ss expired: cold shutdown", self.shutdown_timeout)
            self.handle_cold()
        return False

    def boot_failed(self, error: str) -> None:
        """A child failed while starting: the worker cannot serve, so it stops cold."""
        self.boot_error = error
        if not self.cold:
            self.handle_cold()

    def follow_stop_request(self) -> None:
        """A child asked the worker to stop (source.StopWorker): say why in one line, once,
        and stop warm (the children finish what they run)."""
        if self.requested_exit is not None:
            return
        request = self.fleet.table.stop_request()
        if request is None:
            return
        self.requested_exit, reason = request
        log.error("%s; stopping the worker (exit code %d)", reason, self.requested_exit)
        if self.state is SupervisorState.RUNNING:
            self.handle_term()

    def mark_stopped(self) -> None:
        """The loop is over; a stop request it left undispatched counts as one that came
        while the source waits."""
        self.state = SupervisorState.STOPPED
        if any(r in (signal.SIGINT, signal.SIGTERM, WARM, COLD) for r in self._requests):
            self.source.stop_waiting()

    def exit_code(self) -> int:
        if self.boot_error:
            return EXIT_BOOT_FAILURE
        if self.requested_exit is not None:
            return self.requested_exit
        return EXIT_COLD if self.cold else EXIT_WARM

    # ---- one method per signal ----
    def handle_term(self) -> None:
        """First INT/TERM: warm shutdown; a second one while stopping: cold."""
        if self.state is SupervisorState.STOPPING:
            self.handle_cold()
            return
        log.info("warm shutdown: idle children end now, busy ones after their job")
        self.state = SupervisorState.STOPPING
        self._stop_started = time.monotonic()
        # A child in the middle of a take is retired, not ended: it may hold an item.
        self.fleet.end_all_when_idle()

    def handle_cold(self) -> None:
        """End every child at once; their items go back to the source."""
        log.warning("cold shutdown: ending every child now")
        self.cold = True
        if self.state is not SupervisorState.STOPPING:
            self._stop_started = time.monotonic()
        self.state = SupervisorState.STOPPING
        # Take every cell first: from then on no child can add a claim, so the claims read
        # here are all the items the children may hold when they are ended.
        table = self.fleet.table
        views = [table.mark_gone(cell) for cell in self.fleet.live_cells()]
        self.fleet.pool.end_all()
        claims = [claim for v in views for claim in v.claims]
        if claims:
            self.source.interrupted(claims)

    def handle_hup(self) -> None:
        """Replace every child gracefully (new children load code afresh)."""
        log.info("SIGHUP: replacing all children")
        self.fleet.end_when_idle(self.fleet.live_cells())

    def handle_ttin(self) -> None:
        fleet = self.fleet
        if fleet.target < fleet.pool.capacity:
            fleet.target += 1
            log.info("SIGTTIN: %d children", fleet.target)

    def handle_ttou(self) -> None:
        fleet = self.fleet
        if fleet.target > 1:
            fleet.target -= 1
            log.info("SIGTTOU: %d children", fleet.target)
            for index in fleet.pool.live():
                if index >= fleet.target:
                    fleet.end_when_idle(fleet.cells_of(index))
