"""Flow control (SPEC 11): queue and group limits, pause, and the enqueue options `group`,
`ttl`, `unique_key`, `unique_for`, `debounce`.

The caps are enforced by the take step itself (lua/include/limits.lua), atomically for every
worker of the namespace; this module validates what users give and writes the settings.
A plain queue has no settings hash at all, which is all its takes check (SPEC 13).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import redis

from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.store.keys import KeySpace
from rqconc.store.steps.limits import FlowSteps

# A rate's unit -> its window (ms).
RATE_UNITS = {
    "s": 1000,
    "sec": 1000,
    "second": 1000,
    "m": 60_000,
    "min": 60_000,
    "minute": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*([a-z]+)\s*$")
MAX_LIMIT = 10**9  # far above any real cap; keeps Lua's numbers exact


def parse_rate(rate: Any) -> Tuple[int, int]:
    """A rate such as "100/s", "20/minute", "5/h" as (starts, window in ms); ValueError else."""
    match = _RATE.match(rate.lower()) if isinstance(rate, str) else None
    if not match or match.group(2) not in RATE_UNITS or not 0 < int(match.group(1)) <= MAX_LIMIT:
        raise ValueError(
            f"rate must be like '100/s', '20/min' or '5/h' (a whole number > 0 of starts per "
            f"second, minute or hour), not {rate!r}"
        )
    return int(match.group(1)), RATE_UNITS[match.group(2)]


def check_concurrency(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_LIMIT:
        raise ValueError(f"concurrency must be an int > 0, not {value!r}")
    return value


@dataclass(frozen=True)
class Limits:
    """A queue's flow settings as stored (None: no such cap)."""

    paused: bool = False
    concurrency: Optional[int] = None
    rate: Optional[str] = None
    group_concurrency: Optional[int] = None
    group_rate: Optional[str] = None

    @classmethod
    def read(cls, client: redis.Redis, keys: KeySpace, queue: str) -> Limits:
        return cls.parse(FlowSteps(client, keys).settings(queue))

    @classmethod
    def read_many(
        cls, client: redis.Redis, keys: KeySpace, queues: Sequence[str]
    ) -> Dict[str, Limits]:
        """{queue: its settings} for each of `queues`, in one round trip."""
        found = FlowSteps(client, keys).settings_of(queues)
        return {queue: cls.parse(raw) for queue, raw in zip(queues, found)}

    @classmethod
    def parse(cls, stored: Dict[bytes, bytes]) -> Limits:
        """The settings from their stored hash (limit_settings.lua's fields)."""
        return cls.from_fields({k.decode(): v.decode() for k, v in stored.items()})

    @classmethod
    def from_fields(cls, raw: Dict[str, str]) -> Limits:
        """The settings as the queue's settings hash holds them ("" or absent: none)."""

        def rate(prefix: str) -> Optional[str]:
            if not raw.get(prefix + "rate"):
                return None
            unit = {1000: "s", 60_000: "min", 3_600_000: "h"}.get(int(raw[prefix + "window"]))
            return f"{raw[prefix + 'rate']}/{unit}"

        def number(name: str) -> Optional[int]:
            return int(raw[name]) if raw.get(name) else None

        return cls(
            paused=raw.get("paused") == "1",
            concurrency=number("concurrency"),
            rate=rate(""),
            group_concurrency=number("group_concurrency"),
            group_rate=rate("group_"),
        )

    def caps(self) -> Dict[str, Any]:
        """The caps set, by name (concurrency, rate, group_concurrency, group_rate)."""
        named = {
            "concurrency": self.concurrency,
            "rate": self.rate,
            "group_concurrency": self.group_concurrency,
            "group_rate": self.group_rate,
        }
        return {name: value for name, value in named.items() if value is not None}

    def report(self) -> Dict[str, Any]:
        """What a queue's row in `rqconc info --json` and the dashboard adds: `paused`
        (true) when paused, `limits` (caps()) when a cap is set; a plain queue adds nothing,
        so its row keeps the shape SPEC 7 gives."""
        added: Dict[str, Any] = {"paused": True} if self.paused else {}
        if self.caps():
            added["limits"] = self.caps()
        return added


def limit_fields(prefix: str, concurrency: Any, rate: Any) -> Dict[str, str]:
    """The settings fields of one set of caps, validated ("" removes a field)."""
    fields = {f"{prefix}concurrency": "", f"{prefix}rate": "", f"{prefix}window": ""}
    if concurrency is not None:
        fields[f"{prefix}concurrency"] = str(check_concurrency(concurrency))
    if rate is not None:
        starts, window = parse_rate(rate)
        fields[f"{prefix}rate"], fields[f"{prefix}window"] = str(starts), str(window)
    return fields


class LimitChanges(ABC):
    """What a queue's limits and pause offer (`q.set_limits()`, `q.pause()` ... delegate
    here), each a change of the queue's settings: in Redis (`Limiter`) or, for an eager
    queue, in this process (queue/eager/limits.py)."""

    @abstractmethod
    def change(self, fields: Dict[str, str]) -> None:
        """Write these settings fields ("" removes one)."""

    @abstractmethod
    def read(self) -> Limits:
        """The queue's settings (pause, caps, group caps)."""

    def set(self, concurrency: Optional[int] = None, rate: Optional[str] = None) -> None:
        """Cap the queue's running jobs and its starts ("100/s", "20/min", "5/h", a sliding
        window) across all workers; with no argument, remove both caps."""
        self.change(limit_fields("", concurrency, rate))

    def set_group(self, concurrency: Optional[int] = None, rate: Optional[str] = None) -> None:
        """The same caps for each group (`enqueue(..., group="acme")`) of the queue apart: a
        group at its cap never holds up the other groups or queues."""
        self.change(limit_fields("group_", concurrency, rate))

    def pause(self) -> None:
        """Workers stop taking this queue's jobs (running ones finish); others go on."""
        self.change({"paused": "1"})

    def resume(self) -> None:
        self.change({"paused": ""})


class Limiter(LimitChanges):
    """A queue's limits and pause in Redis (`q.limiter`), written to its settings hash,
    which the take step reads. `client` is called on each use: a Queue connects on first
    use."""

    def __init__(
        self, client: Callable[[], redis.Redis], keys: KeySpace, name: str, wait: ReplicaWait
    ) -> None:
        self.client = client
        self.keys = keys
        self.name = name
        self.wait = wait  # wait_replicas: the queue's steps return once replicas hold them

    def change(self, fields: Dict[str, str]) -> None:
        client = self.client()
        with translated_errors(client):
            FlowSteps(client, self.keys, self.wait).change(self.name, fields)

    def read(self) -> Limits:
        """The queue's settings (pause, caps, group caps)."""
        client = self.client()
        with translated_errors(client):
            return Limits.read(client, self.keys, self.name)


__all__ = ["Limiter", "Limits", "limit_fields", "parse_rate"]
