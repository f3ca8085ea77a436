"""The end of a burst (`--burst`): the supervisor stops once every queue is empty and no
child takes or runs an item.

Queues that look empty are not enough: a child in a take may have just leased the last item.
So the end is a probe in two steps: `consider` (every BURST_PROBE_INTERVAL of the loop)
holds the children (no new take starts; a take under way that returns an item runs it), then
`check` (every loop step) decides once no take is under way: stop, or release the hold and go
on.
"""

from __future__ import annotations

import logging

from rqconc.engine.controls import Controls
from rqconc.engine.fleet import Fleet
from rqconc.engine.source import WorkSource
from rqconc.engine.states import SupervisorState

log = logging.getLogger("rqconc.engine")


class BurstEnd:
    """Decides when a burst worker is done."""

    def __init__(self, fleet: Fleet, source: WorkSource, controls: Controls) -> None:
        self.fleet = fleet
        self.source = source
        self.controls = controls
        self.probing = False

    def consider(self) -> None:
        """Start a probe when no child is busy and the queues look empty."""
        if self.probing or self.controls.state is not SupervisorState.RUNNING:
            return
        if not self.fleet.count().busy and self.source.is_drained():
            self.probing = True
            self.fleet.table.set_hold(True)

    def check(self) -> None:
        """While a probe runs: stop once no child takes or runs an item and the queues are
        still empty; go on if a child is busy again or work came."""
        if not self.probing or self.controls.state is not SupervisorState.RUNNING:
            return
        counts = self.fleet.count()
        if counts.taking and not counts.busy:
            return  # a take is under way: wait for it (at most a take's timeout)
        self.probing = False
        if not counts.busy and self.source.is_drained():
            log.info("burst: every queue is empty and every child idle; stopping")
            self.controls.handle_term()
        else:
            self.fleet.table.set_hold(False)
