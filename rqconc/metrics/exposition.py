"""The Prometheus text format of a namespace's metrics (SPEC 9): what the dashboard serves at
GET /metrics and `rqconc metrics` prints.

A collector of our own on a registry of our own (never prometheus-client's global one): each
scrape reads Redis once through read.snapshot(), so the numbers are the ones every worker
wrote, with no multiprocess collector and nothing cached in this process.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Tuple

from rqconc.connection.clients import ConnectionLike
from rqconc.errors import RQConcError
from rqconc.metrics.read import Histogram, MetricsSnapshot, snapshot

# Content-Type of the text format, for a web app serving render()'s bytes.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
WORKER_STATES = ("started", "idle", "busy", "suspended", "stale")
CHILD_STATES = ("busy", "idle")


class _Prometheus:
    """What we use of prometheus-client, imported on first use: it comes with the `metrics`
    extra, and every other command works without it."""

    def __init__(self) -> None:
        try:
            from prometheus_client import core, exposition, utils
        except ImportError:
            raise RQConcError(
                "the Prometheus text format needs prometheus-client: install rqconc with its "
                "metrics extra (pip install '.[metrics]' in its checkout)"
            ) from None
        self.core, self.generate_latest = core, exposition.generate_latest
        self.float_to_go: Callable[[float], str] = utils.floatToGoString


def _buckets(lib: _Prometheus, histogram: Histogram) -> List[Tuple[str, float]]:
    # Prometheus' own spelling of a bound: 0.005, 1.0, +Inf.
    return [(lib.float_to_go(bound), count) for bound, count in histogram.cumulative()]


def families(snap: MetricsSnapshot) -> Iterator[Any]:
    """The metric families of SPEC 9, with exactly its names and labels."""
    lib = _Prometheus()
    GaugeMetricFamily = lib.core.GaugeMetricFamily
    CounterMetricFamily = lib.core.CounterMetricFamily
    HistogramMetricFamily = lib.core.HistogramMetricFamily
    ns = snap.namespace
    jobs = GaugeMetricFamily(
        "rqconc_jobs", "Jobs per queue and status.", labels=["namespace", "queue", "status"]
    )
    counters = {
        name: CounterMetricFamily(
            f"rqconc_jobs_{name}", f"Jobs {name} per queue.", labels=["namespace", "queue"]
        )
        for name in ("enqueued", "finished", "failed", "retried")
    }
    run = HistogramMetricFamily(
        "rqconc_job_run_seconds",
        "Run time of every run that ended, finished or failed, start to end.",
        labels=["namespace", "queue"],
    )
    wait = HistogramMetricFamily(
        "rqconc_job_wait_seconds",
        "Wait time of started jobs, from entering the queue to start.",
        labels=["namespace", "queue"],
    )
    for queue in snap.queues:
        for status, count in queue.jobs.items():
            jobs.add_metric([ns, queue.name, status], count)
        for name, family in counters.items():
            family.add_metric([ns, queue.name], getattr(queue, name))
        run.add_metric([ns, queue.name], _buckets(lib, queue.run), queue.run.sum_seconds)
        wait.add_metric([ns, queue.name], _buckets(lib, queue.wait), queue.wait.sum_seconds)
    yield jobs
    yield from counters.values()
    yield run
    yield wait
    yield from _function_families(lib, snap)
    yield from _worker_families(lib, snap)


def _function_families(lib: _Prometheus, snap: MetricsSnapshot) -> Iterator[Any]:
    """Finished and failed counts and run times per function of each queue (SPEC 17): at
    most MAX_FUNCTIONS functions a queue, the rest as func="other"."""
    labels = ["namespace", "queue", "func"]
    counters = {
        name: lib.core.CounterMetricFamily(
            f"rqconc_function_jobs_{name}", f"Jobs {name} per queue and function.", labels=labels
        )
        for name in ("finished", "failed")
    }
    run = lib.core.HistogramMetricFamily(
        "rqconc_function_run_seconds",
        "Run time of every run that ended, per queue and function.",
        labels=labels,
    )
    for queue in snap.queues:
        for func, metrics in sorted(queue.functions.items()):
            values = [snap.namespace, queue.name, func]
            for name, family in counters.items():
                family.add_metric(values, getattr(metrics, name))
            run.add_metric(values, _buckets(lib, metrics.run), metrics.run.sum_seconds)
    yield from counters.values()
    yield run


def _worker_families(lib: _Prometheus, snap: MetricsSnapshot) -> Iterator[Any]:
    GaugeMetricFamily = lib.core.GaugeMetricFamily
    workers = GaugeMetricFamily(
        "rqconc_workers", "Live workers per state.", labels=["namespace", "state"]
    )
    for state in sorted(set(WORKER_STATES) | set(snap.workers)):
        workers.add_metric([snap.namespace, state], snap.workers.get(state, 0))
    children = GaugeMetricFamily(
        "rqconc_children",
        "Children (job slots) of each live worker per state.",
        labels=["namespace", "worker", "state"],
    )
    for worker, states in sorted(snap.children.items()):
        for state in CHILD_STATES:
            children.add_metric([snap.namespace, worker, state], states.get(state, 0))
    yield workers
    yield children
    jobs = lib.core.CounterMetricFamily(
        "rqconc_worker_jobs",
        "Jobs each live worker ran since it started, by outcome (finished, failed).",
        labels=["namespace", "worker", "outcome"],
    )
    busy = lib.core.CounterMetricFamily(
        "rqconc_worker_busy_seconds",
        "Seconds the children of each live worker spent running jobs since it started.",
        labels=["namespace", "worker"],
    )
    for worker, totals in sorted(snap.totals.items()):
        for outcome in ("finished", "failed"):
            jobs.add_metric([snap.namespace, worker, outcome], totals[outcome])
        busy.add_metric([snap.namespace, worker], totals["busy_seconds"])
    yield jobs
    yield busy
    dropped = lib.core.CounterMetricFamily(
        "rqconc_events_dropped",
        "Event-stream entries trimmed before a consumer group acknowledged them.",
        labels=["namespace"],
    )
    dropped.add_metric([snap.namespace], snap.events_dropped)
    yield dropped


class _SnapshotCollector:
    """A prometheus-client collector serving one snapshot read beforehand."""

    def __init__(self, snap: MetricsSnapshot) -> None:
        self.snap = snap

    def collect(self) -> Iterator[Any]:
        return families(self.snap)


def render_snapshot(snap: MetricsSnapshot) -> bytes:
    """The text format of a snapshot already read."""
    lib = _Prometheus()
    registry = lib.core.CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snap))
    return bytes(lib.generate_latest(registry))


def render(connection: ConnectionLike, namespace: str = "rqconc") -> bytes:
    """The Prometheus text format of namespace `namespace`, read from Redis now."""
    return render_snapshot(snapshot(connection, namespace))
