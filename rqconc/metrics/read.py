"""Reading the metrics the Lua steps keep (lua/include/metrics.lua, SPEC 9).

`snapshot()` gives everything `/metrics` shows in a few round trips: the counters and
histograms of every queue (one HGETALL), the jobs per status (queue/counts.py), the workers
and their children (the registry). `timeline()` gives the last hour per minute, for charts
and "throughput and p50/p95 over the last minute". Both only read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.queue.counts import queue_counts
from rqconc.store.clock import redis_time
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import text
from rqconc.worker.registry import list_workers

# Upper bounds (ms) of the run- and wait-time buckets, the last one +Inf implied: the same as
# METRIC_BOUNDS_MS in lua/include/metrics.lua (tests/metrics compares them). Times are whole
# ms (Redis' clock), so a 0.4 ms run counts in the 1 ms bucket.
BOUNDS_MS: Tuple[int, ...] = (1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
BOUNDS_MS += (30000, 60000, 300000)
# Field name -> QueueMetrics attribute. Finished has no field: the run histogram counts every
# run that ended, and run_failed the ones of them that failed (lua/include/metrics.lua).
COUNTERS = {
    "enqueued": "enqueued",
    "failed": "failed",
    "retried": "retried",
    "run_failed": "failed_runs",
}


@dataclass
class Histogram:
    """Observations of one time (seconds): counts per bucket, NOT cumulative, one more
    than `BOUNDS_MS` (the last: above every bound), and their sum."""

    counts: List[int] = field(default_factory=lambda: [0] * (len(BOUNDS_MS) + 1))
    sum_seconds: float = 0.0

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> List[Tuple[float, int]]:
        """(upper bound in seconds, observations at most that), +Inf last: Prometheus'."""
        bounds = [ms / 1000 for ms in BOUNDS_MS] + [math.inf]
        total, rows = 0, []
        for bound, count in zip(bounds, self.counts):
            total += count
            rows.append((bound, total))
        return rows

    def quantile(self, q: float) -> Optional[float]:
        """The q-quantile (0..1) in seconds, interpolated linearly inside its bucket (as
        Prometheus' histogram_quantile does); None without observations. Above the last
        bound it answers that bound."""
        total = self.count
        if total == 0:
            return None
        rank, seen, lower = q * total, 0, 0.0
        for bound_ms, count in zip(BOUNDS_MS, self.counts):
            upper = bound_ms / 1000
            if count and seen + count >= rank:
                return lower + (upper - lower) * (rank - seen) / count
            seen, lower = seen + count, upper
        return BOUNDS_MS[-1] / 1000


@dataclass
class FunctionMetrics:
    """One function of a queue (at most MAX_FUNCTIONS per queue are named; the runs of the
    rest count as the function 'other'): its run histogram, failed runs and jobs failed for
    good, as a queue's."""

    name: str
    failed: int = 0
    failed_runs: int = 0
    run: Histogram = field(default_factory=Histogram)

    @property
    def finished(self) -> int:
        return max(0, self.run.count - self.failed_runs)


@dataclass
class QueueMetrics:
    """One queue: its counters since the namespace began, its histograms (run: every run
    that ended, finished or failed; wait: every start), and its jobs now by status (queued,
    started, scheduled, deferred, failed, finished)."""

    name: str
    enqueued: int = 0
    failed: int = 0  # jobs failed for good
    retried: int = 0
    failed_runs: int = 0  # runs that ended in failure: retried, failed for good, canceled
    run: Histogram = field(default_factory=Histogram)
    wait: Histogram = field(default_factory=Histogram)
    jobs: Dict[str, int] = field(default_factory=dict)
    functions: Dict[str, FunctionMetrics] = field(default_factory=dict)

    @property
    def finished(self) -> int:
        """Runs that finished: every run that ended, less those that failed."""
        return max(0, self.run.count - self.failed_runs)

    def function(self, name: str) -> FunctionMetrics:
        """The metrics of function `name` of this queue (made empty when it has none)."""
        return self.functions.setdefault(name, FunctionMetrics(name))


@dataclass
class MetricsSnapshot:
    """Everything `/metrics` shows for one namespace, read at one moment."""

    namespace: str
    queues: List[QueueMetrics]
    workers: Dict[str, int]  # state (started, idle, busy, suspended, stale) -> how many
    children: Dict[str, Dict[str, int]]  # worker name -> {"busy": n, "idle": n}
    # Event-stream entries trimmed before a consumer group acknowledged them (SPEC 18).
    events_dropped: int = 0
    # Worker name -> its totals since it started: finished, failed, busy_seconds (SPEC 17).
    totals: Dict[str, Dict[str, float]] = field(default_factory=dict)

    def queue(self, name: str) -> QueueMetrics:
        """The metrics of queue `name` (zeros if it has none yet)."""
        for queue in self.queues:
            if queue.name == name:
                return queue
        return QueueMetrics(name)


@dataclass
class MinutePoint:
    """One minute of the last hour: runs that finished and jobs that failed for good in it,
    and the run-time quantiles of every run that ended in it (seconds; None without any)."""

    minute: int  # its start, Unix seconds
    finished: int
    failed: int
    run_p50: Optional[float]
    run_p95: Optional[float]


def _bucket_index(bound: str) -> Optional[int]:
    if bound == "inf":
        return len(BOUNDS_MS)
    try:
        return BOUNDS_MS.index(int(bound))
    except ValueError:
        return None  # a bound this version does not know: not shown rather than misfiled


def _fold(raw: Dict[Any, Any], queues: Dict[str, QueueMetrics]) -> None:
    """Files each field of {ns}:metrics (layout: lua/include/metrics.lua) into its queue,
    and a function's (`<queue>,<func>` after the metric) into its queue and that function."""
    for key, value in raw.items():
        name, _, rest = text(key).partition(":")
        try:
            number = int(value)
        except ValueError:
            continue  # only a corrupt write stores a non-integer
        index = None
        if name in ("run", "wait"):
            bound, _, rest = rest.partition(":")
            index = _bucket_index(bound)
            if index is None:
                continue
        queue_name, _, func = rest.partition(",")
        if not queue_name:
            continue
        queue = queues.setdefault(queue_name, QueueMetrics(queue_name))
        targets: List[Any] = [queue, queue.function(func)] if func else [queue]
        for target in targets:
            _add(target, name, index, number)


def _add(target: Any, name: str, index: Optional[int], number: int) -> None:
    """One field's number added to a queue's or a function's metrics."""
    if index is not None:
        getattr(target, name).counts[index] += number
    elif name in ("run_ms", "wait_ms"):
        getattr(target, name[:-3]).sum_seconds += number / 1000
    elif name in COUNTERS and hasattr(target, COUNTERS[name]):
        attribute = COUNTERS[name]
        setattr(target, attribute, getattr(target, attribute) + number)


def snapshot(connection: ConnectionLike, namespace: str = "rqconc") -> MetricsSnapshot:
    """The counters, histograms and job counts of every queue, and the workers by state."""
    client = connect(connection)
    keys = KeySpace(namespace)
    with translated_errors(client):
        raw = client.hgetall(keys.metrics)
        known = sorted(text(n) for n in client.smembers(keys.queues))
        queues: Dict[str, QueueMetrics] = {name: QueueMetrics(name) for name in known}
        _fold(raw, queues)
        names = sorted(queues)
        for row in queue_counts(client, names, namespace) if names else []:
            queues[row["name"]].jobs = {k: v for k, v in row.items() if k != "name"}
        workers: Dict[str, int] = {}
        children: Dict[str, Dict[str, int]] = {}
        totals: Dict[str, Dict[str, float]] = {}
        for worker in list_workers(client, namespace):
            workers[worker["state"]] = workers.get(worker["state"], 0) + 1
            children[worker["name"]] = {"busy": worker["busy"], "idle": worker["idle"]}
            totals[worker["name"]] = dict(worker["totals"])
    dropped = int(raw.get(b"events_dropped") or raw.get("events_dropped") or 0)
    listed = [queues[n] for n in names]
    return MetricsSnapshot(namespace, listed, workers, children, dropped, totals)


def queue_functions(
    connection: ConnectionLike, queue: str, namespace: str = "rqconc"
) -> List[FunctionMetrics]:
    """The functions of `queue` its metrics name (at most MAX_FUNCTIONS, and 'other'), by
    name: finished, failed, run times since the namespace began. One HGETALL."""
    client = connect(connection)
    with translated_errors(client):
        raw = client.hgetall(KeySpace(namespace).metrics)
    queues = {queue: QueueMetrics(queue)}
    _fold(raw, queues)
    return [metrics for _, metrics in sorted(queues[queue].functions.items())]


def timeline(
    connection: ConnectionLike,
    namespace: str = "rqconc",
    queue: Optional[str] = None,
    minutes: int = 60,
) -> List[MinutePoint]:
    """The last `minutes` minutes (at most 60 are kept), oldest first, the current one last:
    of queue `queue`, or of every queue together.

    A minute's counts are what changed between the copy of the totals taken when it began
    (lua/metrics_mark.lua) and the next minute's copy; the current minute's, up to the totals
    now. A minute without a copy shows nothing: no worker ran in it (a worker takes its
    minute's copy when it starts and at every tick), so nothing finished or failed then;
    what changed after the copy before it is counted in that earlier minute."""
    if not 1 <= minutes <= 60:
        raise ValueError(f"minutes must be between 1 and 60, not {minutes!r}")
    client = connect(connection)
    keys = KeySpace(namespace)
    with translated_errors(client):
        current = int(redis_time(client, keys)) // 60 * 60
        starts = [current - 60 * back for back in range(minutes - 1, -1, -1)]
        pipe = client.pipeline(transaction=False)
        for minute in starts:
            pipe.hgetall(keys.metrics_minute(minute))
        pipe.hgetall(keys.metrics)
        *copies, totals = pipe.execute()
    # Each minute ends where the next copy (or, for the current one, the totals) begins.
    ends: List[Dict[Any, Any]] = []
    following = totals
    for copy in reversed(copies):
        ends.append(following)
        following = copy or following
    ends.reverse()
    return [
        _point(minute, copy, end, queue) if copy else MinutePoint(minute, 0, 0, None, None)
        for minute, copy, end in zip(starts, copies, ends)
    ]


def _minute_counts(raw: Dict[Any, Any], queue: Optional[str]) -> Tuple[List[int], int, int]:
    """The run-bucket counts, failed runs and failures of `queue` (or of all) in totals or a
    copy."""
    runs, failed_runs, failed = [0] * (len(BOUNDS_MS) + 1), 0, 0
    for key, value in raw.items():
        name, _, rest = text(key).partition(":")
        try:
            number = int(value)
        except ValueError:
            continue  # only a corrupt write stores a non-integer
        if name == "run":
            bound, _, rest = rest.partition(":")
        queue_name = rest.partition(",")[0]  # a function's field counts for its queue
        if queue is not None and queue_name != queue:
            continue
        if name == "run":
            index = _bucket_index(bound)
            if index is not None:
                runs[index] += number
        elif name == "failed":
            failed += number
        elif name == "run_failed":
            failed_runs += number
    return runs, failed_runs, failed


def _point(
    minute: int, begin: Dict[Any, Any], end: Dict[Any, Any], queue: Optional[str]
) -> MinutePoint:
    runs_begin, failed_runs_begin, failed_begin = _minute_counts(begin, queue)
    runs_end, failed_runs_end, failed_end = _minute_counts(end, queue)
    run = Histogram()
    # Totals only grow; a reset of {ns}:metrics in between would make a difference negative.
    run.counts = [max(0, e - b) for b, e in zip(runs_begin, runs_end)]
    finished = max(0, run.count - max(0, failed_runs_end - failed_runs_begin))
    failed = max(0, failed_end - failed_begin)
    return MinutePoint(minute, finished, failed, run.quantile(0.5), run.quantile(0.95))
