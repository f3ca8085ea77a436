"""The Prometheus text format of a namespace's metrics (SPEC 9): what the dashboard serves at
GET /metrics and `rqconc metrics` prints.

A collector of our own on a registry of our own (never prometheus-client's global one): each
scrape reads Redis once through read.snapshot(), so the numbers are the ones every worker
wrote, with no multiprocess collector and nothing cached in this process.
"""

from __future__ import annotations

from typing import Iterator, List, Tuple

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from rqconc.connection.clients import ConnectionLike
from rqconc.metrics.read import Histogram, MetricsSnapshot, snapshot

# Content-Type of the text format, for a web app serving render()'s bytes.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
WORKER_STATES = ("started", "idle", "busy", "suspended", "stale")
CHILD_STATES = ("busy", "idle")


def _buckets(histogram: Histogram) -> List[Tuple[str, float]]:
    return [(floatToGoString(bound), count) for bound, count in histogram.cumulative()]


def families(snap: MetricsSnapshot) -> Iterator[Metric]:
    """The metric families of SPEC 9, with exactly its names and labels."""
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
        "Run time of finished jobs, start to end.",
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
        run.add_metric([ns, queue.name], _buckets(queue.run), queue.run.sum_seconds)
        wait.add_metric([ns, queue.name], _buckets(queue.wait), queue.wait.sum_seconds)
    yield jobs
    yield from counters.values()
    yield run
    yield wait
    yield from _worker_families(snap)


def _worker_families(snap: MetricsSnapshot) -> Iterator[Metric]:
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


class _SnapshotCollector:
    """A prometheus-client collector serving one snapshot read beforehand."""

    def __init__(self, snap: MetricsSnapshot) -> None:
        self.snap = snap

    def collect(self) -> Iterator[Metric]:
        return families(self.snap)


def render_snapshot(snap: MetricsSnapshot) -> bytes:
    """The text format of a snapshot already read."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(snap))
    return generate_latest(registry)


def render(connection: ConnectionLike, namespace: str = "rqconc") -> bytes:
    """The Prometheus text format of namespace `namespace`, read from Redis now."""
    return render_snapshot(snapshot(connection, namespace))
