"""The worker's ways to Redis: the supervisor's pooled client, and per child (process, thread
or greenlet) its own direct connection for the steps every job pays for.

Nothing here crosses a process boundary: a pickled or forked copy opens its own client.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, cast
from urllib.parse import quote

import redis

from rqconc.connection import cluster, sentinel
from rqconc.connection.clients import ConnectionLike, connect, describe
from rqconc.connection.forks import fork_count
from rqconc.connection.replicas import ReplicaWait
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import Steps

log = logging.getLogger("rqconc.worker")


def url_of(client: redis.Redis) -> str:
    """A URL reaching the same server as `client`, for processes that cannot inherit it.
    (TLS certificate options are not carried over: pass a URL for those.)"""
    if cluster.is_cluster(client):
        return cluster.url_of(client)
    managed = sentinel.url_of(client)
    if managed is not None:
        return managed
    kwargs = client.connection_pool.connection_kwargs
    user, password = kwargs.get("username"), kwargs.get("password")
    auth = ""
    if password:
        auth = f"{quote(user or '', safe='')}:{quote(password, safe='')}@"
    if kwargs.get("path"):
        query = f"db={kwargs.get('db', 0)}" + (
            f"&password={quote(password, safe='')}" if password else ""
        )
        return f"unix://{kwargs['path']}?{query}"
    scheme = (
        "rediss"
        if issubclass(client.connection_pool.connection_class, redis.SSLConnection)
        else "redis"
    )
    return (
        f"{scheme}://{auth}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
        f"/{kwargs.get('db', 0)}"
    )


class ChildState:
    """What one child (process, thread or greenlet) owns alone: its connection's steps."""

    __slots__ = ("steps", "forks")

    def __init__(self, steps: Steps) -> None:
        self.steps = steps
        # A forked child's thread-local still holds its parent's ChildState: not to use.
        self.forks = fork_count()


class Orphans:
    """The claims of one process whose take (or completion that also took) may have leased
    a job although its reply was lost, keyed by claim, each with the child that owns it
    (None: a slot whose thread cannot be told); their jobs go back once Redis answers.

    Race: a take's claims are not its sender's alone. Idle slots share a take step
    (engine/slots/takes.py): one thread, the batch's leader, takes for every slot that
    asked, and after a lost reply each slot takes again under the same claim
    (slots/child_side.begin_take), in a take another thread may lead. Were orphans kept by
    the thread whose take lost its reply, as they were, the next leader would lease a new
    job under a claim whose lost job was never put back, and the first thread's late
    put-back (it finds the job by its claim) would requeue that new job while it runs: it
    ran twice. So the invariant, kept here: *no take goes out under a claim while it is an
    orphan, and an orphan is put back by one thread at a time.* The sender of a take puts
    back the orphans first (`checkout`: any thread may put back any, as no take under an
    orphan is on its way); a claim of its take that another thread is putting back right
    now is left out of the take (its slot takes again next round). Claims stay orphans
    until put back, so a put-back that failed is tried again by the next take, whoever
    sends it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owners: Dict[str, Optional[ChildState]] = {}  # in the order filed
        self._settling: Set[str] = set()  # checked out by a thread putting them back

    def __bool__(self) -> bool:
        # Without the lock, on every take: a claim is filed before the take that lost its
        # reply returns, so before any later take under it can be sent.
        return bool(self._owners)

    def file(self, claims: Sequence[str], owner: ChildState, owned: int) -> None:
        """Orphans from one lost reply: the first `owned` claims are `owner`'s own slot's."""
        with self._lock:
            for position, claim in enumerate(claims):
                self._owners[claim] = owner if position < owned else None

    def checkout(self, claims: Sequence[str]) -> Tuple[List[str], Set[str]]:
        """Every orphan no other thread is putting back, now the caller's to put back (then
        `settled` or `release`); and those of `claims` another thread is putting back."""
        with self._lock:
            mine = [claim for claim in self._owners if claim not in self._settling]
            busy = {claim for claim in claims if claim in self._settling}
            self._settling.update(mine)
        return mine, busy

    def settled(self, claim: str) -> None:
        with self._lock:
            self._owners.pop(claim, None)
            self._settling.discard(claim)

    def release(self, claims: Sequence[str]) -> None:
        """Checked-out claims not put back (Redis away): orphans still, for the next take."""
        with self._lock:
            self._settling.difference_update(claims)

    def hand_over(self, owner: ChildState) -> List[str]:
        """The orphans of an ending child's own slot, no longer orphans here: it leaves them
        in its slot for the supervisor (WorkSource.child_stopping). A slot's claim filed by
        another thread's take stays, for a later take (or its lease) to settle."""
        with self._lock:
            own = [c for c, o in self._owners.items() if o is owner and c not in self._settling]
            for claim in own:
                del self._owners[claim]
        return own


# How often an outage is recalled while it lasts (s): once lost, then at most this often.
REMINDER_EVERY = 60.0


class _Outage:
    """One outage of one worker process, whoever of its children, duties or threads notices
    it: one line when lost, a reminder at most every REMINDER_EVERY s, one line when back."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.since: Optional[float] = None  # monotonic start of the outage, None when up
        self.said = 0.0  # monotonic time of the last line about it

    def down(self, now: float) -> Optional[float]:
        """The outage's length so far if a line is due now, else None."""
        with self.lock:
            if self.since is None:
                self.since = self.said = now
                return 0.0
            if now - self.said >= REMINDER_EVERY:
                self.said = now
                return now - self.since
            return None

    def up(self, now: float, sent: float) -> Optional[float]:
        """The length of the outage that just ended, or None if there was none. A call sent
        before the outage began proves nothing: Redis answered it before it went away
        (while stopping, it answers what it read before closing the other connections)."""
        with self.lock:
            if self.since is None or sent < self.since:
                return None
            since, self.since = self.since, None
        return now - since


class Connections:
    """The clients of one worker: `client`/`steps` for the supervisor and rare calls,
    `child()` for the calling child's own connection and state."""

    def __init__(
        self, url: ConnectionLike, keys: KeySpace, wait: Optional[ReplicaWait] = None
    ) -> None:
        self.wait = wait  # wait_replicas: every step of this worker waits for them
        self._client: Optional[redis.Redis] = None
        self._client_pid = 0
        self._steps: Optional[Steps] = None
        self._steps_client: Optional[redis.Redis] = None
        if not isinstance(url, (str, type(None))):  # a client: used as is here; other
            # processes get its URL
            self._client, self._client_pid = cast(redis.Redis, url), os.getpid()
            url = url_of(self._client)
        self.url = url
        self.keys = keys
        # Thread-local: greenlet-local under gevent, whose patching replaces it.
        self._local = threading.local()
        # The supervisor's process speaks for the worker about outages (its duties notice
        # them too); children in processes of their own only log them at DEBUG.
        self._owner_pid = os.getpid()
        self._outage = _Outage()
        self.orphans = Orphans()  # of this process's children, whichever sent the take

    def __getstate__(self) -> Dict[str, Any]:
        # No socket crosses a process boundary: each process opens its own client.
        state = self.__dict__.copy()
        state["_client"], state["_client_pid"], state["_steps"] = None, 0, None
        state["_steps_client"] = None
        del state["_local"], state["_outage"], state["orphans"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
        self._outage = _Outage()
        self.orphans = Orphans()

    @property
    def connected(self) -> bool:
        """Whether this process has opened its client yet."""
        return self._client is not None and self._client_pid == os.getpid()

    @property
    def client(self) -> redis.Redis:
        if self._client is None or self._client_pid != os.getpid():
            self._client = connect(self.url)
            self._client_pid = os.getpid()
        return self._client

    @property
    def steps(self) -> Steps:
        client = self.client
        if self._steps is None or self._steps_client is not client:
            self._steps, self._steps_client = Steps(client, self.keys, self.wait), client
        return self._steps

    def child(self) -> ChildState:
        """The calling child's state, made on first use in each thread, greenlet or process."""
        state: Optional[ChildState] = getattr(self._local, "state", None)
        if state is None or state.forks != fork_count():
            direct = cluster.direct_connection(self.client, self.keys.seq)
            steps = Steps(direct, self.keys, self.wait)  # type: ignore[arg-type]
            state = self._local.state = ChildState(steps)
        return state

    def child_started(self) -> None:
        if self._client_pid != os.getpid():  # forked: drop the parent's client
            self._client, self._client_pid, self._steps = None, 0, None
        self._local.state = None  # a thread or greenlet of the supervisor's process: its own

    def child_stopping(self) -> None:
        state: Optional[ChildState] = getattr(self._local, "state", None)
        if state is not None:
            state.steps.client.close()
            self._local.state = None

    def redis_down(self, exc: Exception, doing: str, delay: Optional[float] = None) -> None:
        """Log an outage once per worker when it starts and at most once a minute while it
        lasts; every other failure (each child's, each retry's) only at DEBUG."""
        retry = f"; retrying in {delay:.1f} s" if delay is not None else ""
        where = describe(self._client) if self._client is not None else "Redis"
        reason = exc.__class__.__name__
        lasted = self._outage.down(time.monotonic()) if os.getpid() == self._owner_pid else None
        if lasted is None:
            log.debug("cannot reach Redis at %s while %s (%s)%s", where, doing, reason, retry)
        elif lasted == 0.0:
            log.warning(
                "cannot reach Redis at %s while %s (%s); the worker keeps retrying until it "
                "answers",
                where,
                doing,
                reason,
            )
        else:
            log.warning(
                "cannot reach Redis at %s for %.0f s now (%s while %s); still retrying",
                where,
                lasted,
                reason,
                doing,
            )

    def redis_up(self, sent: float) -> None:
        """A call sent at `sent` (time.monotonic()) succeeded: end the worker's outage, if
        any, with one line naming its length (a child in a process of its own says nothing:
        its supervisor does)."""
        if self._outage.since is None:  # the common case, without the lock
            return
        lasted = self._outage.up(time.monotonic(), sent)
        if lasted is not None and os.getpid() == self._owner_pid:
            log.info("Redis at %s is reachable again after %.1f s", self.describe(), lasted)

    def describe(self) -> str:
        return describe(self.client)
