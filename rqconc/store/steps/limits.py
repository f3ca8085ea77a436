"""The Lua steps of limits (SPEC 11), beside core.py (the other steps' one caller):
changing a queue's limits (limit_settings.lua) and the enqueue of a unique or debounced
job (the jobs parked behind their groups' caps are deleted by removal.py's drop_parked)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any, Dict, List, Optional, Sequence, Tuple

from rqconc.store.keys import FlowKeys, KeySpace, unique_key
from rqconc.store.scripts import Step, script, text
from rqconc.store.steps.bound import BoundSteps


class UniqueReply(IntEnum):
    """What enqueue_unique.lua did."""

    STORED = 1  # a new job holds the key
    EXISTING = 0  # a job holding the key is waiting, running, or ended within unique_for
    DEBOUNCED = 2  # the waiting job got the new arguments and starts `debounce` later


class FlowSteps(BoundSteps):
    """The limits steps bound to one client and namespace."""

    def settings(self, queue: str) -> Dict[bytes, bytes]:
        settings: Dict[bytes, bytes] = self.client.hgetall(FlowKeys(self.keys, queue).settings)
        return settings

    def settings_of(self, queues: Sequence[str]) -> List[Dict[bytes, bytes]]:
        """The settings of each of `queues`, in one round trip (a plain queue's: empty)."""
        pipe = self.client.pipeline(transaction=False)
        for queue in queues:
            pipe.hgetall(FlowKeys(self.keys, queue).settings)
        return list(pipe.execute()) if queues else []

    def change(self, queue: str, fields: Dict[str, str]) -> int:
        """Set (or with "" remove) limit fields of `queue` (flow:<queue>); parked jobs go back."""
        f, k = FlowKeys(self.keys, queue), self.keys
        keys = [f.settings, k.queue(queue), k.marker(queue), f.parked_groups, f.group_timers]
        args: List[Any] = [k.prefix, queue]
        for pair in fields.items():
            args += pair
        return int(script("limit_settings")(self.client, keys, args))

    def enqueue_unique(
        self,
        queue: str,
        job_id: str,
        fields: Dict[str, str],
        priority: int,
        due_ms: Optional[int],
    ) -> Tuple[UniqueReply, str]:
        """As `enqueue_unique_step`, run here."""
        step = enqueue_unique_step(self.keys, queue, job_id, fields, priority, due_ms)
        return step.run(self.client)


def enqueue_unique_step(
    k: KeySpace,
    queue: str,
    job_id: str,
    fields: Dict[str, str],
    priority: int,
    due_ms: Optional[int],
) -> Step:
    """Store one job holding its `unique_key` field, unless a job holding that key is
    waiting, running or ended within its unique_for; with `debounce`, a waiting holder
    takes the new arguments and moves later instead. Returns what happened and the id
    of the job that holds the key now (UniqueReply, id)."""
    keys = [k.seq, k.queues, k.queue(queue), k.marker(queue), k.scheduled(queue), k.events]
    keys += [k.job(job_id), unique_key(k, fields["unique_key"])]
    args: List[Any] = [queue, "" if due_ms is None else due_ms, k.prefix, priority, job_id]
    for pair in fields.items():
        args += pair
    return Step(script("enqueue_unique"), keys, args, _unique_reply)


def _unique_reply(reply: Any) -> Tuple[UniqueReply, str]:
    code, holder = reply
    return UniqueReply(code), text(holder)
