"""The seam between the engine and whatever produces work.

The engine knows nothing of Redis: a child asks its source for an item, performs it, and
the supervisor tells the source what happened to items it could not see finish (a child
that died, an overrun, a cold shutdown). The Redis queue is one source; `FakeSource` is
another.

Every take carries a *claim*: a string the engine makes up before the take
(`<supervisor uid>.<child index>.<take sequence>`) and writes into the child's slot, so the
supervisor can name an item even when the child died between receiving it and reporting
it. Sources use the claim as their fencing token.

One source object serves the supervisor and all its children. Process backends hand each
child a copy (by fork or by pickling), and every child calls `child_started()` first, so
a source must not carry sockets across that boundary: open connections lazily.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, List, NamedTuple, Optional, Sequence


@dataclass
class WorkItem:
    """One unit of work as the engine sees it."""

    claim: str
    item_id: str
    # Wall-clock (time.time()) moment by which the item must have ended; None: no limit.
    deadline: Optional[float] = None
    payload: Any = field(default=None, repr=False)
    # What `perform` made of it, for the worker's totals: FINISHED, FAILED, or "" (not run:
    # refused, given back).
    outcome: str = ""

    def overran(self) -> bool:
        """Whether the item is past its deadline. A source asks this when the work returns,
        before recording it: a job that held the GIL or did not yield (a greenlet) may
        return past its deadline before the supervisor could end it, and must then be
        recorded as timed out, never as finished."""
        return self.deadline is not None and time.time() > self.deadline


NextClaim = Callable[[], Optional[str]]
FINISHED, FAILED = "finished", "failed"


class WorkTotals(NamedTuple):
    """What a supervisor's children did since it started: items finished and failed (a
    child that died mid-item, an overrun or a cancel counts as failed), and the seconds
    they spent on items (an item still running counts once it ends)."""

    finished: int = 0
    failed: int = 0
    busy_seconds: float = 0.0


class StopWorker(Exception):
    """Raised by `WorkSource.perform` once the source has settled the item (given it back):
    the worker cannot serve as it is configured, and serving on would only harm the work
    (a worker whose allow-list refuses every job it takes). The child goes on; the
    supervisor logs the message as one line, stops warm and exits with `exit_code`."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class SupervisorInfo:
    """What a source may want to publish about the supervisor it serves."""

    name: str
    uid: str
    pid: int
    host: str
    backend: str
    size: int
    state: str
    busy: int
    idle: int
    current_items: Sequence[str]
    suspended: bool = False
    # Latest moment any child's take loop ran: liveness means "the loop ticks", not "the
    # process exists".
    loop_tick: float = 0.0
    # Per child: (index, state, item id or "", pid or 0); per slot with `--slots`.
    children: Sequence[Any] = ()
    # Jobs one child runs at once (`--slots`): busy + idle = size * slots.
    slots: int = 1
    totals: WorkTotals = WorkTotals()


class WorkSource(ABC):
    """Where children get their work from, and where the supervisor reports on it."""

    # ---- child side: runs in the child (process, thread or greenlet) ----
    def child_started(self, child_index: int) -> None:
        """Called once in each new child before its first take (post-fork set-up)."""

    def child_alone(self) -> None:
        """Called in a process child that runs one item at a time (forking or
        multiprocessing without `--slots`) before its first take: no other slot shares its
        process, so a source may skip what only concurrent slots need (a lock per item)."""

    @abstractmethod
    def take(self, claim: str, timeout: float) -> Optional[WorkItem]:
        """Wait up to `timeout` seconds for one item; None when there is none."""

    def take_many(self, claims: Sequence[str], timeout: float) -> List[WorkItem]:
        """Wait up to `timeout` seconds for items, at most one per claim, each leased under
        its own claim (`item.claim` says whose); fewer, or none, when fewer wait. Used when
        several slots of one child are idle at once (`--slots`, slots/host.py): a source that
        takes several items in one step (the Redis source: lua/take_many.lua) saves a round
        trip per item. This default takes one, under the first claim."""
        item = self.take(claims[0], timeout)
        return [item] if item is not None else []

    @abstractmethod
    def perform(self, item: WorkItem, next_claim: Optional[NextClaim] = None) -> Optional[WorkItem]:
        """Run the item and record its outcome. Exceptions of the work itself are the
        source's to record; `StopWorker` (raised once the item is settled) stops the
        worker; anything else escaping ends the child (and the item is lost).
        A source may take the child's next item in the same step that records this one
        (saving a round trip per item): it then calls `next_claim()` once the item has run,
        just before recording, and, if that gives a claim (None: the child may not take
        more now), takes under it and returns what it took. Returning None sends the child
        back to `take`."""

    @abstractmethod
    def give_back(self, item: WorkItem) -> None:
        """The child received the item but may not start it: return it untouched."""

    def child_stopping(self) -> Sequence[str]:
        """Called in a child that ends normally, to release what it opened. Returns the
        claims under which it may still hold an item it could not hand back itself (a take
        whose reply was lost while the store was away): the child leaves them in its slot,
        and the supervisor hands those items back (`interrupted`) once it can."""
        return ()

    # ---- supervisor side: runs in the supervisor ----
    def supervisor_started(self, info: SupervisorInfo) -> None:
        """The supervisor is up (register it, start maintenance)."""

    def supervisor_stopped(self, info: SupervisorInfo) -> None:
        """The supervisor is about to exit."""

    def stop_waiting(self) -> None:
        """Another stop request (INT/TERM or `stop()`) came while the supervisor exits:
        whatever `supervisor_stopped` waits for, stop waiting now. Runs in a signal handler
        or another thread: set a flag, nothing more."""

    def renew(self, claims: Sequence[str]) -> None:
        """Keep the leases of items being performed (called every `renew_interval`)."""

    def tick(self, info: SupervisorInfo) -> None:
        """Periodic duties of a supervisor: heartbeat, recovery; every `tick_interval`."""

    def interrupted(self, claims: Sequence[str]) -> None:
        """A cold shutdown ended the children holding these claims: put their items back
        at the front, without counting an attempt. Unknown claims are ignored."""

    def lost(self, claim: str, reason: str) -> None:
        """The child holding this claim died mid-item: a failed attempt."""

    def timed_out(self, claim: str, seconds: float) -> None:
        """The item overran its deadline; the supervisor has ended (or abandoned) its child."""

    def is_drained(self) -> bool:
        """Whether no work is waiting (burst mode ends once drained and all children idle)."""
        return False

    def is_suspended(self) -> bool:
        """Whether children should stop taking new items for now."""
        return False

    def stop_requested(self, claims: Sequence[str]) -> Sequence[str]:
        """Of these running claims, the ones whose items must be stopped now (cancel)."""
        return ()

    def canceled(self, claim: str) -> None:
        """The supervisor stopped the child running this claim because it was canceled."""

    def renew_interval(self) -> float:
        return 5.0

    def tick_interval(self) -> float:
        """How often the supervisor runs `tick` (and its other once-a-tick duties)."""
        return 1.0

    def native_work(self) -> Optional[NativeWork]:
        """How this source runs items as tasks of one event loop (the asyncio backend's
        native core, native_slots.py); None: its slots are threads that hand their
        coroutines to the loop (event_loops.SharedLoop)."""
        return None


class NativeWork(ABC):
    """A source's side of the native core: called in the event loop's thread only, by the
    slots, which are tasks of that loop. A slot ended by the supervisor (a timeout, a cancel,
    a cold shutdown) has its task cancelled; the supervisor settles its item, and the claim
    fences whatever the cancelled task would still record."""

    @abstractmethod
    async def take_many(self, claims: Sequence[str], timeout: float) -> List[WorkItem]:
        """As `WorkSource.take_many`, for the slots that are idle in one turn of the loop."""

    @abstractmethod
    def runs_natively(self, item: WorkItem) -> bool:
        """Whether `perform` awaits this item in the loop (an `async def` job); the others
        run through `WorkSource.perform` in a thread of the core's pool."""

    @abstractmethod
    async def perform(
        self, item: WorkItem, next_claim: Optional[NextClaim] = None
    ) -> Optional[WorkItem]:
        """As `WorkSource.perform`, awaited in the loop."""

    def held(self, claims: Sequence[str]) -> Sequence[str]:
        """A slot ends: of its last claims, those under which a take may still hold an item
        the source could not put back (its reply was lost while the store was away); they
        are the supervisor's to hand back now (as `WorkSource.child_stopping`)."""
        return ()
