"""A work source without Redis, for running and testing the engine on its own.

Two modes:
- synthetic (no spool): endless items that sleep or burn CPU for a moment;
- spool: each file `<spool>/<name>.json` is one item, taken by an atomic rename into
  `<spool>/taken/<claim>=<name>` (so processes never take the same item twice). The file
  holds what the item does: `{"sleep": s, "cpu": s, "exit": code, "crash": true,
  "raise": "message", "timeout": s, "take_delay": s}` (`take_delay`: the take's reply
  arrives that much later, as over a slow network).

With `log` set, every event (taken, started, done, failed, given_back, interrupted, lost,
timed_out, canceled) is appended to that file as one JSON line, which tests read.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Sequence

from rqconc.engine.source import NextClaim, SupervisorInfo, WorkItem, WorkSource

POLL_INTERVAL = 0.01
# With a spool (tests), the supervisor ticks ten times a second: its status file, burst end
# and memory limit follow within 0.1 s, so the tests wait on those for less.
SPOOL_TICK_INTERVAL = 0.1
_HOARD: list = []


class ChildCrash(BaseException):
    """Escapes the child loop on purpose (a child dying by an exception)."""


class FakeSource(WorkSource):
    def __init__(
        self,
        spool: Optional[str] = None,
        log: Optional[str] = None,
        seed: Optional[int] = None,
        mean_seconds: float = 0.2,
    ) -> None:
        self.spool = Path(spool) if spool else None
        self.log = log
        self.mean_seconds = mean_seconds
        self._random = random.Random(seed)
        self._counter = 0
        if self.spool:
            for sub in ("taken", "done", "revoked"):
                (self.spool / sub).mkdir(parents=True, exist_ok=True)

    def record(self, event: str, **fields: Any) -> None:
        if not self.log:
            return
        line = json.dumps({"event": event, "pid": os.getpid(), "t": time.time(), **fields})
        # One write per line with O_APPEND: lines of concurrent processes never interleave.
        fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)

    # ---- child side ----
    def child_started(self, child_index: int) -> None:
        self._random = random.Random((os.getpid() << 8) + child_index)
        self.record("child_started", index=child_index)

    def tick(self, info: SupervisorInfo) -> None:
        if self.spool is None:
            return
        status = {
            "state": info.state,
            "busy": info.busy,
            "idle": info.idle,
            "size": info.size,
            "suspended": info.suspended,
            "children": [list(c) for c in info.children],
        }
        tmp = self.spool / "status.tmp"
        tmp.write_text(json.dumps(status))
        tmp.rename(self.spool / "supervisor-status")  # readers never see half a file

    def tick_interval(self) -> float:
        return SPOOL_TICK_INTERVAL if self.spool else super().tick_interval()

    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        if self.spool is None:
            return self._synthetic(claim, timeout)
        deadline = time.monotonic() + timeout
        while True:
            item = self._take_from_spool(claim)
            if item is not None or time.monotonic() >= deadline:
                return item
            time.sleep(POLL_INTERVAL)

    def _synthetic(self, claim: str, timeout: float) -> Optional[WorkItem]:
        self._counter += 1
        seconds = self._random.uniform(0.2, 1.8) * self.mean_seconds
        kind = "cpu" if self._random.random() < 0.3 else "sleep"
        item_id = f"synthetic-{os.getpid()}-{self._counter}"
        return WorkItem(claim, item_id, None, {kind: seconds})

    def _take_from_spool(self, claim: str) -> Optional[WorkItem]:
        for path in sorted(self._spool_dir.glob("*.json")):
            taken = self._spool_dir / "taken" / f"{claim}={path.name}"
            with self._spool_lock():  # the claim's child may be ended meanwhile (revoked)
                if (self._spool_dir / "revoked" / claim).exists():
                    return None
                try:
                    os.rename(path, taken)
                except FileNotFoundError:
                    continue  # another child was faster
            spec = json.loads(taken.read_text())
            deadline = time.time() + spec["timeout"] if spec.get("timeout") else None
            self.record("taken", item=path.stem, claim=claim)
            if spec.get("take_delay"):  # taken, but the child does not know it yet
                time.sleep(float(spec["take_delay"]))
            return WorkItem(claim, path.stem, deadline, spec)
        return None

    def perform(self, item: WorkItem, next_claim: Optional[NextClaim] = None) -> Optional[WorkItem]:
        spec: Dict[str, Any] = item.payload
        self.record("started", item=item.item_id, claim=item.claim)
        if spec.get("exit") is not None:
            os._exit(int(spec["exit"]))
        if spec.get("crash"):
            raise ChildCrash(f"item {item.item_id} crashed its child")
        if spec.get("sleep"):
            time.sleep(float(spec["sleep"]))
        if spec.get("cpu"):
            _burn(float(spec["cpu"]))
        if spec.get("allocate_mb"):
            # Held on purpose: the child grows, as a leaky job would make it.
            _HOARD.append(bytearray(int(spec["allocate_mb"]) * 2**20))
        if item.overran():  # not ended in time (it never yielded): a timeout, not done
            if self.spool is None or self._settle(item.claim, "timed_out"):
                self.record("timed_out", claim=item.claim, item=item.item_id, late=True)
        elif spec.get("raise"):
            self.record("failed", item=item.item_id, claim=item.claim, error=spec["raise"])
        elif self.spool is None or self._settle(item.claim, "done"):
            self.record("done", item=item.item_id, claim=item.claim)
        return None  # no chained take: the child takes its next item itself

    def is_drained(self) -> bool:
        # Waiting items only, as a Redis queue tells: an item a child has just taken is
        # not waiting any more, whether or not its child has reported it yet.
        if self.spool is None:
            return False
        return not any(self.spool.glob("*.json"))

    def give_back(self, item: WorkItem) -> None:
        self._return_to_spool([item.claim], "given_back")

    # ---- supervisor side ----
    def interrupted(self, claims: Sequence[str]) -> None:
        if self.spool is None:
            return
        # As the Redis source: a take still under way for an ended child takes nothing.
        with self._spool_lock():
            for claim in claims:
                (self.spool / "revoked" / claim).touch()
        self._return_to_spool(claims, "interrupted")

    def lost(self, claim: str, reason: str) -> None:
        if self._settle(claim, "lost") or self.spool is None:
            self.record("lost", claim=claim, reason=reason)

    def timed_out(self, claim: str, seconds: float) -> None:
        if self._settle(claim, "timed_out") or self.spool is None:
            self.record("timed_out", claim=claim, seconds=seconds)

    def canceled(self, claim: str) -> None:
        if self._settle(claim, "canceled") or self.spool is None:
            self.record("canceled", claim=claim)

    # ---- spool bookkeeping; a claim is settled once (the fake's fencing) ----
    @property
    def _spool_dir(self) -> Path:
        """The spool, for the calls that only run when there is one."""
        assert self.spool is not None
        return self.spool

    @contextmanager
    def _spool_lock(self) -> Iterator[None]:
        # flock on a fresh descriptor excludes other threads of this process too.
        fd = os.open(self._spool_dir / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _taken(self, claim: str) -> Optional[Path]:
        if self.spool is None:
            return None
        found = list((self.spool / "taken").glob(f"{claim}=*"))
        return found[0] if found else None

    def _settle(self, claim: str, outcome: str) -> bool:
        taken = self._taken(claim)
        if taken is None:
            return False
        try:
            os.rename(taken, self._spool_dir / "done" / f"{outcome}={taken.name}")
            return True
        except FileNotFoundError:
            return False

    def _return_to_spool(self, claims: Sequence[str], event: str) -> None:
        for claim in claims:
            taken = self._taken(claim)
            if taken is None:
                continue
            name = taken.name.split("=", 1)[1]
            try:
                os.rename(taken, self._spool_dir / name)
            except FileNotFoundError:
                continue
            self.record(event, item=Path(name).stem, claim=claim)


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
