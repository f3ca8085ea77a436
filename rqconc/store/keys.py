"""Every Redis key name rqconc uses, built in one place (layout: docs/architecture.md).

All keys of a namespace share the hash tag `{namespace}`, so every Lua step, even one that
spans several queues, touches a single Redis Cluster slot.
"""

from __future__ import annotations

import re
from typing import Any, List

_BAD_NAME = re.compile(r"[\s,{}]")

# The score layout of q:<queue>, computed in Lua (queue_score in lua/include/jobs.lua
# and its inlined copy in lua/enqueue.lua; tests/store/test_correctness_lua.py checks they
# agree with queue_score below). Priority p (0..100) owns the band
# [(100 - p) * SCORE_BAND, (101 - p) * SCORE_BAND); a job scores the band's middle plus the
# namespace counter n (INCR seq) when it joins the back, minus n when it is put back at the
# front (give-back, cold shutdown, lease recovery). While n < SCORE_MIDDLE both stay
# strictly inside the band, so no counter value lets a job cross into another priority,
# and every score is an integer below 101 * 2^46 < 2^53, exact in a double. 2^45 numbers
# last 220 years at 5,000 jobs/s; past SEQ_LIMIT n is held there (priority still holds,
# FIFO within a priority then falls back on id order).
SCORE_BAND = 2**46
SCORE_MIDDLE = 2**45
SEQ_LIMIT = SCORE_MIDDLE - 1


def queue_score(priority: int, n: int, front: bool = False) -> int:
    """The score of a waiting job of `priority` numbered `n` by the counter."""
    middle = (100 - priority) * SCORE_BAND + SCORE_MIDDLE
    n = min(n, SEQ_LIMIT)
    return middle - n if front else middle + n


def check_queue_name(name: str) -> str:
    """A queue name is a non-empty string without whitespace, commas or braces (commas
    separate queues on the command line; braces would confuse the cluster hash tag)."""
    if not isinstance(name, str) or not name or _BAD_NAME.search(name):
        raise ValueError(
            f"invalid queue name {name!r}: use a non-empty name without spaces, commas or braces"
        )
    return name


def split_namespaces(namespace: Any) -> List[str]:
    """`"a,b"`, `["a", "b"]` or `"a"` as a list of distinct names (order kept)."""
    names = namespace.split(",") if isinstance(namespace, str) else list(namespace)
    names = [n.strip() if isinstance(n, str) else n for n in names]
    if not names or any(not n for n in names):
        raise ValueError(f"invalid namespace {namespace!r}: give one name or a comma list")
    if len(set(names)) != len(names):
        raise ValueError(f"namespace {namespace!r} names one namespace twice")
    return names


class KeySpace:
    """The key names of one namespace (default `rqconc`)."""

    def __init__(self, namespace: str = "rqconc") -> None:
        if not isinstance(namespace, str) or not namespace or _BAD_NAME.search(namespace):
            raise ValueError(f"invalid namespace {namespace!r}")
        self.namespace = namespace
        self.prefix = "{" + namespace + "}:"

    def __repr__(self) -> str:
        return f"KeySpace({self.namespace!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeySpace) and other.namespace == self.namespace

    def __hash__(self) -> int:
        return hash(self.namespace)

    # ---- namespace-wide ----
    @property
    def seq(self) -> str:
        return self.prefix + "seq"

    @property
    def queues(self) -> str:
        return self.prefix + "queues"

    @property
    def active(self) -> str:
        return self.prefix + "active"

    @property
    def claims(self) -> str:
        return self.prefix + "claims"

    @property
    def workers(self) -> str:
        return self.prefix + "workers"

    @property
    def suspended(self) -> str:
        """Present while every worker of the namespace is suspended (may carry a TTL)."""
        return f"{self.prefix}suspended"

    @property
    def maintenance(self) -> str:
        return self.prefix + "maintenance"

    @property
    def events(self) -> str:
        """The capped stream of job transitions."""
        return self.prefix + "events"

    def revoked(self, claim: str) -> str:
        """Set when a claim's holder is gone: a take still in flight under it takes nothing."""
        return self.prefix + "revoked:" + claim

    @property
    def metrics(self) -> str:
        """Counters and histograms of every queue (lua/include/metrics.lua builds it too)."""
        return self.prefix + "metrics"

    def functions(self, queue: str) -> str:
        """The functions a queue's metrics name (at most MAX_FUNCTIONS; the rest: 'other')."""
        return self.prefix + "funcs:" + queue

    def metrics_minute(self, minute: int) -> str:
        """One minute's counts (minute: Unix seconds, a multiple of 60), kept an hour."""
        return self.prefix + "metrics:" + str(minute)

    @property
    def canceling(self) -> str:
        """Ids of running jobs asked to stop; supervisors read it every tick."""
        return self.prefix + "canceling"

    # ---- per queue ----
    def queue(self, name: str) -> str:
        return self.prefix + "q:" + name

    def marker(self, name: str) -> str:
        return self.prefix + "marker:" + name

    def scheduled(self, name: str) -> str:
        return self.prefix + "scheduled:" + name

    def started(self, name: str) -> str:
        return self.prefix + "started:" + name

    def deferred(self, name: str) -> str:
        """Jobs waiting for their parents (lua/include/keys.lua builds it too)."""
        return self.prefix + "deferred:" + name

    def failed(self, name: str) -> str:
        """Dead letters, scored by failure time (their order for listing and requeue_all)."""
        return self.prefix + "failed:" + name

    def failed_expiry(self, name: str) -> str:
        """When each dead letter's failure_ttl runs out (ms; absent: kept forever): lets
        readers and maintenance drop expired ones without reading every job hash."""
        return self.prefix + "failed_expiry:" + name

    def finished(self, name: str) -> str:
        return self.prefix + "finished:" + name

    # ---- per job / worker ----
    @property
    def job_prefix(self) -> str:
        """Passed to the take script: the only key Lua derives, from an id it just popped."""
        return self.prefix + "job:"

    def job(self, job_id: str) -> str:
        return self.job_prefix + job_id

    def done(self, job_id: str) -> str:
        return self.prefix + "done:" + job_id

    def log(self, job_id: str) -> str:
        """The lines a job logged (lua/job_log.lua; lua/include/keys.lua builds this name
        too, from the same pattern)."""
        return self.prefix + "log:" + job_id

    def enqueued(self, job_id: str) -> str:
        """The enqueue step's short-lived mark of a request that stored a job (lua/enqueue.lua)."""
        return self.prefix + "enqueued:" + job_id

    def dependents(self, job_id: str) -> str:
        """Deferred jobs waiting for this one, scored in enqueue order (lua/include/
        keys.lua builds this name too, from the same pattern)."""
        return self.prefix + "dependents:" + job_id

    def group(self, group_id: str) -> str:
        """A group's record: member ids, pending count, chord (lua/include/keys.lua
        builds this name too, from the same pattern)."""
        return self.prefix + "group:" + group_id

    def worker(self, name: str) -> str:
        return self.prefix + "worker:" + name

    # ---- cron (rqconc/cron.py, rqconc/scheduler.py) ----
    @property
    def crons(self) -> str:
        """Cron entries: id -> JSON (expression, job template, version, registered_at)."""
        return self.prefix + "crons"

    @property
    def cron_last(self) -> str:
        """Cron id -> the latest tick (Unix seconds) whose job has been enqueued."""
        return self.prefix + "cron:last"

    @property
    def cron_fired(self) -> str:
        """Cron id -> how many ticks' jobs were enqueued (for an entry's `times` bound)."""
        return self.prefix + "cron:fired"

    def cron_planned(self, cron_id: str) -> str:
        """Jobs enqueued for a cron's ticks (score = tick ms): removal deletes those that
        have not started."""
        return self.prefix + "cron:planned:" + cron_id

    @property
    def scheduler_lease(self) -> str:
        """The cron scheduler leader's lease: "host:pid:worker name", with a TTL."""
        return self.prefix + "scheduler:leader"


class FlowKeys:
    """The keys of one queue's flow control (SPEC 11; lua/include/limits.lua builds the
    per-group ones from the same patterns while it runs)."""

    def __init__(self, keys: KeySpace, queue: str) -> None:
        self.prefix, self.queue = keys.prefix, queue

    @property
    def settings(self) -> str:
        """Limits, group limits and pause of the queue (absent for a plain queue)."""
        return f"{self.prefix}flow:{self.queue}"

    @property
    def starts(self) -> str:
        """Start times (ms) in the queue's rate window."""
        return f"{self.prefix}starts:{self.queue}"

    @property
    def parked_groups(self) -> str:
        return f"{self.prefix}parkedgroups:{self.queue}"

    @property
    def group_timers(self) -> str:
        return f"{self.prefix}gtimers:{self.queue}"

    def group_running(self, group: str) -> str:
        return f"{self.prefix}grunning:{self.queue}:{group}"

    def group_starts(self, group: str) -> str:
        return f"{self.prefix}gstarts:{self.queue}:{group}"

    def parked(self, group: str) -> str:
        """Waiting jobs of a capped group, scored as in the queue."""
        return f"{self.prefix}parked:{self.queue}:{group}"


def unique_key(keys: KeySpace, key: str) -> str:
    """The id of the job that holds a `unique_key` (lua/enqueue_unique.lua)."""
    return f"{keys.prefix}unique:{key}"
