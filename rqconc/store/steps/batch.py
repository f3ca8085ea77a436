"""Steps about several jobs in one call (lua/take_many.lua, lua/complete_many.lua), beside
steps.py.

`take_many` is for a worker process with several idle slots at once: a child with
`--slots K` (engine/slots/takes.py) and the asyncio backend, whose idle tasks would
otherwise each send a take. Every job comes back leased under its own claim, exactly as a
plain `Steps.take` leases one, so the completion (with its fused take of the next job),
renewal, fencing and recovery stay per job. `complete_many` is for the slots of one process
that finish together (worker/completions.py): each job is completed as `Steps.complete`
completes one, and each slot's next job taken under its own claim.
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple, Union

from rqconc.store.scripts import Step, script, taken, text
from rqconc.store.steps.core import CompleteReply, Steps

# (claim, (job id, fields)) per job taken; or, when none was, the delay (ms) until the
# earliest scheduled job is due (-1: none scheduled).
TakenMany = Union[int, List[Tuple[str, Tuple[str, dict]]]]


def take_many(
    steps: Steps, claims: Sequence[str], queues: Sequence[str], lease_ms: int, worker: str
) -> TakenMany:
    """Lease up to len(claims) jobs of `queues` in one step, the i-th under claims[i] (a
    claim that gets no job took nothing). Returns what `TakenMany` says."""
    keys, args = take_many_call(steps, claims, queues, lease_ms, worker)
    return parsed_many(script("take_many")(steps.client, keys, args))


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
    keys, args = take_many_call(steps, claims, queues, lease_ms, worker)
    markers = [steps.keys.marker(name) for name in queues]
    take = script("take_many")
    _, reply = steps.client.pipelined(
        ("BZPOPMIN", *markers, timeout), take.command(steps.client, keys, args)
    )
    if take.missing(reply):
        return -1
    if isinstance(reply, Exception):
        raise reply
    return parsed_many(reply)


def take_many_call(
    steps: Steps, claims: Sequence[str], queues: Sequence[str], lease_ms: int, worker: str
) -> Tuple[List[str], List[Any]]:
    """The keys and arguments of lua/take_many.lua (either transport: worker/native.py runs
    it on a redis.asyncio client)."""
    k = steps.keys
    keys = [k.seq, k.active, k.claims, k.events, *steps.take_keys(queues)]
    return keys, [lease_ms, worker, k.prefix, *claims]


def take_step(
    steps: Steps, claims: Sequence[str], queues: Sequence[str], lease_ms: int, worker: str
) -> Step:
    """The take of these claims as a Step for either transport (the asyncio backend's native
    core runs it awaited, worker/native.py): take.lua for one claim (the cheaper script),
    take_many.lua for several; decoded as `TakenMany` either way."""
    if len(claims) == 1:
        claim = claims[0]
        keys, args = steps.take_call(claim, queues, lease_ms, worker)
        return Step(script("take"), keys, args, lambda reply: _taken_one(claim, reply))
    keys, args = take_many_call(steps, claims, queues, lease_ms, worker)
    return Step(script("take_many"), keys, args, parsed_many)


def _taken_one(claim: str, reply: Any) -> TakenMany:
    found = taken(reply)
    return found if isinstance(found, int) else [(claim, found)]


async def await_then_take(client: Any, step: Step, markers: Sequence[str], timeout: float) -> Any:
    """On a redis.asyncio client: block up to `timeout` s on the queues' `markers`, then run
    the take `step`, in one round trip (as `wait_then_take_many`). -1 when its script is not
    loaded yet (the next plain take loads it)."""
    pipe = client.pipeline(transaction=False)
    pipe.bzpopmin(list(markers), timeout)
    pipe.execute_command(*step.script.command(client, step.keys, step.args))
    _, reply = await pipe.execute(raise_on_error=False)
    if step.script.missing(reply):
        return -1
    if isinstance(reply, Exception):
        raise reply
    return step.decode(reply)


def parsed_many(reply: Any) -> TakenMany:
    if not isinstance(reply, list):
        return int(reply)
    return [(text(entry[0]), taken(entry[1:])) for entry in reply]


# One job's part of a combined completion: (claim, job id, queue, serialized result,
# serializer's name, the slot's next claim or "" to take nothing).
Completion = Tuple[str, str, str, Any, str, str]


def complete_many(
    steps: Steps,
    completions: Sequence[Completion],
    queues: Sequence[str],
    lease_ms: int,
    worker: str,
) -> List[Tuple[CompleteReply, Any]]:
    """Record several jobs' return values in one step (lua/complete_many.lua), each as
    `Steps.complete` records one, and take each slot's next job from `queues` under its
    next claim. Per job, in order: (RECORDED or STALE, what `Steps.take` returns for its
    next claim, or None when it gave none or was stale)."""
    keys, args = complete_many_call(steps, completions, queues, lease_ms, worker)
    return completed_many(script("complete_many")(steps.client, keys, args))


def complete_many_call(
    steps: Steps,
    completions: Sequence[Completion],
    queues: Sequence[str],
    lease_ms: int,
    worker: str,
) -> Tuple[List[str], List[Any]]:
    """The keys and arguments of lua/complete_many.lua (either transport)."""
    k = steps.keys
    keys = [k.active, k.claims, k.seq, k.events, *steps.take_keys(queues)]
    args: List[Any] = [k.prefix, worker, lease_ms, len(queues), len(completions)]
    for claim, job_id, queue, result, serializer, next_claim in completions:
        keys += [k.job(job_id), k.started(queue), k.finished(queue)]
        args += [claim, job_id, result, serializer, next_claim]
    return keys, args


def complete_many_step(
    steps: Steps,
    completions: Sequence[Completion],
    queues: Sequence[str],
    lease_ms: int,
    worker: str,
) -> Step:
    """`complete_many` as a Step for either transport (worker/native.py awaits it)."""
    keys, args = complete_many_call(steps, completions, queues, lease_ms, worker)
    return Step(script("complete_many"), keys, args, completed_many)


def completed_many(replies: Any) -> List[Tuple[CompleteReply, Any]]:
    """complete_many's reply, per job: (code, what its next take returned or None)."""
    return [
        (CompleteReply(int(reply[0])), taken(reply[1]) if len(reply) > 1 else None)
        for reply in replies
    ]
