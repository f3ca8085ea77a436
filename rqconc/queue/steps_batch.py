"""Steps that take several jobs in one call (lua/take_many.lua), beside steps.py.

`take_many` is for a worker process with several idle slots at once: a child with
`--slots K` (engine/take_combiner.py) and the asyncio backend, whose idle tasks would
otherwise each send a take. Every job comes back leased under its own claim, exactly as a
plain `Steps.take` leases one, so the completion (with its fused take of the next job),
renewal, fencing and recovery stay per job.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple, Union

import redis

from rqconc.queue.scripts import script, taken, text
from rqconc.queue.steps import PROMOTE_BATCH, Steps

# (claim, (job id, fields)) per job taken; or, when none was, the delay (ms) until the
# earliest scheduled job is due (-1: none scheduled).
TakenMany = Union[int, List[Tuple[str, Tuple[str, dict]]]]


def take_many(
    steps: Steps, claims: Sequence[str], queues: Sequence[str], lease_ms: int, worker: str
) -> TakenMany:
    """Lease up to len(claims) jobs of `queues` in one step, the i-th under claims[i] (a
    claim that gets no job took nothing). Returns what `TakenMany` says."""
    keys, args = _call(steps, claims, queues, lease_ms, worker)
    return _parsed(script("take_many")(steps.client, keys, args))


def wait_then_take_many(
    steps: Steps,
    timeout: float,
    claims: Sequence[str],
    queues: Sequence[str],
    lease_ms: int,
    worker: str,
) -> TakenMany:
    """Block up to `timeout` s on the queues' markers, then `take_many`, in one round trip
    (as `Steps.wait_then_take`; needs a DirectConnection). -1 when the script is not loaded
    yet (the next plain `take_many` loads it)."""
    keys, args = _call(steps, claims, queues, lease_ms, worker)
    markers = [steps.keys.marker(name) for name in queues]
    _, reply = steps.client.pipelined(
        ("BZPOPMIN", *markers, timeout),
        ("EVALSHA", script("take_many").sha, len(keys), *keys, *args),
    )
    if isinstance(reply, redis.exceptions.NoScriptError):
        return -1
    if isinstance(reply, Exception):
        raise reply
    return _parsed(reply)


def _call(
    steps: Steps, claims: Sequence[str], queues: Sequence[str], lease_ms: int, worker: str
) -> Tuple[List[str], List[Any]]:
    k = steps.keys
    keys = [k.seq, k.active, k.claims, k.events, *steps.take_keys(queues)]
    return keys, [lease_ms, worker, PROMOTE_BATCH, k.prefix, *claims]


def _parsed(reply: Any) -> TakenMany:
    if not isinstance(reply, list):
        return int(reply)
    return [(text(entry[0]), taken(entry[1:])) for entry in reply]
