"""How many jobs each queue holds per status: what `rqconc info` and dashboards show.

Finished jobs and dead letters whose TTL ran out stay in their sets until a maintenance
pass trims them (lua/trim_ended.lua): they are not counted. Jobs of a group parked at its
cap (parked:<queue>:<group>, lua/include/limits.lua) wait as much as those in the queue:
they count as queued.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import redis

from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.queue.dead_letters import count_expired
from rqconc.store.clock import redis_time_ms
from rqconc.store.keys import FlowKeys, KeySpace
from rqconc.store.steps.core import text

# The statuses counted per queue, in the order `rqconc info` shows them.
COUNTS = ("queued", "started", "scheduled", "deferred", "failed", "finished")
_SIZE_COMMANDS = {"zset": "zcard", "set": "scard", "list": "llen", "hash": "hlen"}


def _count_keys(keys: KeySpace, name: str) -> Dict[str, str]:
    """Each count's key for queue `name`."""
    return {
        "queued": keys.queue(name),
        "started": keys.started(name),
        "scheduled": keys.scheduled(name),
        "deferred": keys.deferred(name),
        "failed": keys.failed(name),
        "finished": keys.finished(name),
    }


def queue_counts(
    connection: ConnectionLike = None,
    names: Optional[List[str]] = None,
    namespace: str = "rqconc",
) -> List[Dict[str, Any]]:
    """[{"name", "queued", "started", ...}] for `names` (default: every queue that ever
    received a job, sorted), in three round trips at most: names, key types (and parked
    groups), sizes."""
    client = connect(connection)
    keys = KeySpace(namespace)
    with translated_errors(client):
        if names is None:
            names = sorted(text(n) for n in client.smembers(keys.queues))
        return _counts(client, keys, names)


def queue_names(connection: ConnectionLike = None, namespace: str = "rqconc") -> List[str]:
    """Names of every queue that ever received a job, sorted."""
    client = connect(connection)
    with translated_errors(client):
        return sorted(text(n) for n in client.smembers(KeySpace(namespace).queues))


def _counts(client: redis.Redis, keys: KeySpace, names: List[str]) -> List[Dict[str, Any]]:
    wanted = [
        (name, count, key) for name in names for count, key in _count_keys(keys, name).items()
    ]
    pipe = client.pipeline(transaction=False)
    for _, _, key in wanted:
        pipe.type(key)
    for name in names:  # in the same round trip: the groups with parked jobs
        pipe.smembers(FlowKeys(keys, name).parked_groups)
    replies = pipe.execute()
    types = [text(t) for t in replies[: len(wanted)]]
    parked_groups = dict(zip(names, replies[len(wanted) :]))
    now = redis_time_ms(client, keys)  # the clock the expiries were written on
    pipe = client.pipeline(transaction=False)
    sized: List[Tuple[str, str, int]] = []  # (queue, count, +1 or -1) per reply
    for name, groups in parked_groups.items():
        for group in groups:
            pipe.zcard(FlowKeys(keys, name).parked(text(group)))
            sized.append((name, "queued", 1))
    for (name, count, key), kind in zip(wanted, types):
        if count == "finished" and kind == "zset":  # scored by expiry
            pipe.zcount(key, f"({now}", "+inf")
        elif kind in _SIZE_COMMANDS:
            getattr(pipe, _SIZE_COMMANDS[kind])(key)
        else:
            continue
        sized.append((name, count, 1))
        if count == "failed" and kind == "zset":
            count_expired(pipe, keys, name, now)
            sized.append((name, count, -1))
    rows: Dict[str, Dict[str, Any]] = {
        n: dict({"name": n}, **dict.fromkeys(COUNTS, 0)) for n in names
    }
    for (name, count, sign), size in zip(sized, pipe.execute(raise_on_error=False)):
        if not isinstance(size, Exception):  # a key of another type than ours: not counted
            rows[name][count] = max(0, rows[name][count] + sign * int(size))
    return [rows[n] for n in names]
