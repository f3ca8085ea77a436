"""An eager queue's limits and pause (`q.limiter` of an eager Queue), kept in this process
(memory.py) as a real queue keeps them in Redis: a paused eager queue holds the jobs
enqueued to it (status `queued`) and runs them, in order, when it is resumed; `q.limits`
reads the settings back. Caps are validated and kept, and never hold a job: an inline run
is the only one running, and its start is not delayed by a rate (no time passes inline).
"""

from __future__ import annotations

from typing import Dict

from rqconc.queue.eager import memory
from rqconc.queue.limits.settings import LimitChanges, Limits


class EagerLimiter(LimitChanges):
    """A queue's limits and pause (rqconc/queue/limits/settings.py) in this process's settings."""

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name

    def change(self, fields: Dict[str, str]) -> None:
        settings = memory.settings(self.namespace, self.name)
        settings.update(fields)
        if settings.get("paused") != "1":
            memory.release_held(self.namespace, self.name)

    def read(self) -> Limits:
        return Limits.from_fields(memory.settings(self.namespace, self.name))


__all__ = ["EagerLimiter"]
