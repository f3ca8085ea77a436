"""Where jobs parked behind their group's cap (parked:<queue>:<group>, lua/include/flow.lua)
stand: they wait as much as those in the queue, so a queue's length and a job's position
count them (`q.count`, `job.position`)."""

from __future__ import annotations

from typing import Optional

import redis

from rqconc.store.keys import FlowKeys, KeySpace
from rqconc.store.scripts import text


def waiting_count(client: redis.Redis, keys: KeySpace, name: str) -> int:
    """Jobs waiting in queue `name`: in the queue and parked behind their group's cap. A
    queue without parked jobs costs one round trip."""
    flow = FlowKeys(keys, name)
    pipe = client.pipeline(transaction=False)
    pipe.zcard(keys.queue(name))
    pipe.smembers(flow.parked_groups)
    queued, groups = pipe.execute()
    if not groups:
        return int(queued)
    pipe = client.pipeline(transaction=False)
    for group in groups:
        pipe.zcard(flow.parked(text(group)))
    return int(queued) + sum(int(n) for n in pipe.execute())


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
