"""How a supervisor duty calls Redis: Redis going away or refusing never raises here.

The supervisor keeps its children through an outage (their leases cover the gap), so a duty
whose call fails logs it (one line per outage, one per duty and kind of refusal) and gives
None; the duty runs again at its next turn.
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Dict, Optional, TypeVar

import redis

from rqconc.connection.backoff import REDIS_DOWN
from rqconc.worker.connections import Connections

log = logging.getLogger("rqconc.worker")
T = TypeVar("T")
RENEWING = "renewing leases"


class Guard:
    """Runs the supervisor's Redis calls for one worker (one namespace)."""

    def __init__(self, connections: Connections) -> None:
        self.connections = connections
        # Monotonic time of the last outage, or of the last refused renewal: leases may have
        # gone unrenewed since, by every worker, so recovery waits a lease after it.
        self.troubled_at = float("-inf")
        self._refusals: Dict[str, str] = {}  # duty -> the kind of error reply last logged

    def run(self, doing: str, action: Callable[[], T]) -> Optional[T]:
        """`action()`, or None when Redis is away or refused it (`doing` names the duty in
        the log line)."""
        sent = time.monotonic()
        try:
            result = action()
        except REDIS_DOWN as exc:
            self.outage(exc, doing)
            return None
        except redis.exceptions.ResponseError as exc:
            self._refused(doing, exc)
            return None
        self.connections.redis_up(sent)
        if self._refusals.pop(doing, None) is not None:
            log.warning("Redis accepts %s again", doing)
        return result

    def outage(self, exc: Exception, doing: str) -> None:
        self.troubled_at = time.monotonic()
        self.connections.redis_down(exc, doing)

    def _refused(self, doing: str, exc: redis.exceptions.ResponseError) -> None:
        """An error reply (OOM at maxmemory, MISCONF, an ACL's NOPERM) lasts until someone
        fixes Redis: the worker keeps its children, and says so once per duty and kind of
        refusal rather than at every tick."""
        # redis-py strips the reply's code for the types it maps (OOM, NOPERM): name both.
        reason = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
        kind = " ".join(reason.split(" ", 2)[:2])
        if self._refusals.get(doing) != kind:
            self._refusals[doing] = kind
            log.error("Redis refused %s (%s); retrying until it accepts", doing, reason)
        if doing == RENEWING:  # other workers' renewals were likely refused too
            self.troubled_at = time.monotonic()
