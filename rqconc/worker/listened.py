"""The queues a worker listens on: the names it was given, or with `-q all` (`"*"`) every
queue of the namespace, including queues that appear while it runs.

Named queues cost nothing here. Every queue is read from the namespace's set of known queues
(enqueue adds to it), at most once per REFRESH seconds per child, so that a take stays one
round trip; names are sorted, which gives the `ordered` strategy a stable meaning.
"""

from __future__ import annotations

import time
from typing import Any, List, Sequence, Tuple

import redis

from rqconc.connection.direct import DirectConnection
from rqconc.store.clock import redis_time_ms
from rqconc.store.keys import KeySpace, check_queue_name
from rqconc.store.steps.core import text

EVERY = "*"  # in place of queue names: every queue of the namespace
REFRESH = 1.0  # seconds between two reads of the known queues (per child)


class Listened:
    """The names given, or (with `["*"]`) the namespace's known queues, re-read as they
    appear. Picklable: a copy in another process starts with the same cached names."""

    def __init__(self, queues: Sequence[str], keys: KeySpace) -> None:
        given = [check_queue_name(q) for q in queues]
        if not given:
            raise ValueError("a worker needs at least one queue")
        if EVERY in given and len(given) > 1:
            raise ValueError(f"{EVERY!r} (every queue) cannot be combined with queue names")
        self.every = given == [EVERY]
        self.given = given  # what the registry shows: the names, or "*"
        self.keys = keys
        # (monotonic time of the read, names): replaced whole, so threads sharing this
        # object read a consistent pair; two that refresh at once only read twice.
        self._read: Tuple[float, List[str]] = (float("-inf"), [])

    def names(self, client: redis.Redis, keep_on_error: bool = False) -> List[str]:
        """The queues to take from now. With `keep_on_error`, a failed re-read keeps the
        names last read (a completion that also takes must not fail for it)."""
        if not self.every:
            return self.given
        read_at, names = self._read
        now = time.monotonic()
        if now - read_at < REFRESH:
            return names
        try:
            names = sorted(text(n) for n in _members(client, self.keys.queues))
        except (redis.exceptions.RedisError, OSError):
            if not keep_on_error:
                raise
            return names
        self._read = (now, names)
        return names

    def drained(self, client: redis.Redis) -> bool:
        """No job waits in these queues and none of their scheduled jobs is due (burst mode
        does not wait for jobs scheduled later). Raises what the client raises."""
        now = redis_time_ms(client, self.keys)  # due times are on Redis' clock (store/clock.py)
        pipe = client.pipeline(transaction=False)
        for queue in self.names(client):
            pipe.zcard(self.keys.queue(queue))
            pipe.zcount(self.keys.scheduled(queue), "-inf", now)
        return not any(pipe.execute())


def _members(client: redis.Redis, key: str) -> List[Any]:
    # A child's own connection is a DirectConnection (typed as a client by Steps), which
    # speaks raw commands only.
    if isinstance(client, DirectConnection):
        return list(client.execute("SMEMBERS", key))
    return list(client.smembers(key))
