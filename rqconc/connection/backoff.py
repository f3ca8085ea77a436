"""How long to wait before trying Redis again: one schedule for every retry loop of rqconc.

redis-py's own retry inside one command (a couple of quick reconnects, see
`clients.client_options`) rides over a blip; anything longer is a caller's loop, and every
such loop waits by this schedule: first, 2*first, 4*first... capped at `cap`, each optionally
drawn uniformly between half and all of that, so that a fleet of workers does not reconnect
in lockstep after an outage.
"""

from __future__ import annotations

import random
import time
from typing import Iterator, Optional

import redis

# Transient: the server is away, restarting (LOADING is a ConnectionError) or, during a
# failover, a replica that does not take writes yet. Worth waiting for, unlike an error reply.
REDIS_DOWN = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ReadOnlyError,
    # A Redis Cluster between losing a master and promoting a replica, or unreachable.
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    redis.exceptions.RedisClusterException,
)


def delay_of(attempt: int, cap: float, base: float, jitter: bool) -> float:
    """The wait after failed attempt number `attempt` (0-based) of the schedule."""
    ceiling = min(cap, base * 2 ** min(attempt, 64))
    return random.uniform(ceiling / 2, ceiling) if jitter else ceiling


def backoff_delays(cap: float = 30.0, base: float = 0.5, jitter: bool = True) -> Iterator[float]:
    """Endless delays (s) between attempts: base, 2*base, 4*base... capped at `cap`; with
    `jitter`, each a uniform draw between half and all of that."""
    attempt = 0
    while True:
        yield delay_of(attempt, cap, base, jitter)
        attempt += 1


class Backoff:
    """The same schedule as a wait that several callers share. Children that share one
    source (threads, greenlets) fail together: only a failure after the current wait has
    run out moves to the next delay, so a hundred threads do not jump to the cap at once."""

    def __init__(self, first: float = 0.1, cap: float = 30.0, jitter: bool = False) -> None:
        self.first, self.cap, self.jitter = first, cap, jitter
        self._failures = 0  # a counter, not a generator: a source holding it is pickled
        self.delay = 0.0
        self.until = 0.0

    def failed(self) -> Optional[float]:
        """The new wait, or None when this failure falls within the current one."""
        if self.remaining() > 0:
            return None
        self.delay = delay_of(self._failures, self.cap, self.first, self.jitter)
        self._failures += 1
        self.until = time.monotonic() + self.delay
        return self.delay

    def remaining(self) -> float:
        return max(0.0, self.until - time.monotonic())

    def wait(self) -> float:
        """The wait to sleep now after a failure: a new one, or what is left of the current."""
        return self.failed() or self.remaining()

    def reset(self) -> bool:
        """Back to normal; True if it had been backing off."""
        was_failing, self.delay, self.until = self.delay > 0, 0.0, 0.0
        self._failures = 0
        return was_failing
