"""Where jobs parked behind their group's cap (parked:<queue>:<group>, lua/include/flow.lua)
stand: they wait as much as those in the queue, so a queue's length and a job's position
count them (`q.count`, `job.position`)."""

from __future__ import annotations

from typing import Optional

import redis

from rqconc.store.keys import FlowKeys, KeySpace
from rqconc.store.reads import Read, read
from rqconc.store.scripts import text


def waiting_count(client: redis.Redis, keys: KeySpace, name: str) -> int:
    """Jobs waiting in queue `name`: in the queue and parked behind their group's cap. A
    queue without parked jobs costs one round trip."""
    return int(read(waiting_count_reads(keys, name), client))


def waiting_count_reads(keys: KeySpace, name: str) -> Read:
    """The reads of `waiting_count`, for either transport (rqconc/store/reads.py)."""
    flow = FlowKeys(keys, name)
    queued, groups = yield [("zcard", keys.queue(name)), ("smembers", flow.parked_groups)]
    if not groups:
        return int(queued)
    parked = yield [("zcard", flow.parked(text(group))) for group in groups]
    return int(queued) + sum(int(n) for n in parked)


def parked_position(
    client: redis.Redis, keys: KeySpace, name: str, group: str, job_id: str
) -> Optional[int]:
    """The place of a job parked behind its group's cap (None: not parked): the earliest
    it can run, once its group may start again: after the jobs of the queue that come
    before it in run order, and after its group's jobs parked before it."""
    parked = FlowKeys(keys, name).parked(group)
    pipe = client.pipeline(transaction=False)
    pipe.zscore(parked, job_id)
    pipe.zrank(parked, job_id)
    score, rank = pipe.execute()
    if score is None or rank is None:
        return None
    ahead = client.zcount(keys.queue(name), "-inf", f"({score!r}")
    return int(ahead) + int(rank)
