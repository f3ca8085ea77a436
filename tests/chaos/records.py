"""What the chaos driver logs: the faults it injected and what they struck, the job events
it tailed, and the promises it saw broken on the way."""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Set, Tuple

import psutil
import redis


@dataclass
class FaultRecord:
    """One injected fault and what it struck, in the host's wall-clock time (`time.time()`
    here; tests/chaos/jobs.py stamps each run with the recording Redis' TIME, the same clock,
    as a worker's own may be skewed), for the audit to match repeated runs against."""

    kind: str
    at: float  # monotonic, for recovery times
    wall: float = field(default_factory=time.time)
    number: int = 0  # 1-based, in the order injected
    recovery: Optional[float] = None
    note: str = ""
    hit: bool = False  # it struck a process or cut off live connections
    # Processes killed or cold-stopped (a threading or gevent worker runs its jobs in the
    # supervisor's pid), and by when all of them were gone.
    victims: Set[int] = field(default_factory=set)
    struck: Optional[float] = None
    # When workers were cut off from the queue's Redis (Redis down, proxy dropping/stalling).
    window: Optional[Tuple[float, float]] = None
    # reply_cut: when replies were being cut (connections kept working otherwise), and how
    # many of each step's replies were lost.
    cutting: Optional[Tuple[float, float]] = None
    cut_steps: Counter = field(default_factory=Counter)

    @property
    def began(self) -> float:
        span = self.window or self.cutting
        return span[0] if span else self.wall

    @property
    def ended(self) -> float:
        span = self.window or self.cutting
        if span:
            return span[1]
        return self.struck if self.struck is not None else self.wall


@dataclass
class Violations:
    items: List[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        print("VIOLATION:", text, flush=True)
        self.items.append(text)


def wait_until(condition: Callable[[], object], timeout: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except (redis.exceptions.RedisError, psutil.Error, OSError):
            pass
        time.sleep(interval)
    return False


class EventTail(threading.Thread):
    """Reads the job event stream continuously (it is capped, a long run would outgrow it)
    and counts, per job, the events the audit needs (`interrupted`, `started`, ...)."""

    def __init__(self, url: str, key: str) -> None:
        super().__init__(daemon=True, name="event-tail")
        self.url, self.key = url, key
        self.counts: Dict[str, Counter] = defaultdict(Counter)
        self.last_id = "0-0"
        self.stopping = threading.Event()

    def run(self) -> None:
        client = redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=2)
        while True:
            try:
                entries = client.xread({self.key: self.last_id}, count=5000)
            except redis.exceptions.RedisError:
                time.sleep(0.1)
                continue
            got = 0
            for _key, messages in entries or []:
                for entry_id, fields in messages:
                    self.last_id = entry_id.decode()
                    event = fields.get(b"event", b"").decode()
                    job_id = fields.get(b"job_id", b"").decode()
                    self.counts[job_id][event] += 1
                    got += 1
            if not got:
                if self.stopping.is_set():
                    return
                time.sleep(0.2)
