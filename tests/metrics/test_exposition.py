"""SPEC 9: the Prometheus text format (prometheus-client), read back with prometheus-client's
own parser: exactly the metric names and labels of the SPEC, the same text from `rqconc
metrics`, and one-line errors for misuse and an unreachable Redis."""

import json
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

from rqconc.connection.clients import connect
from rqconc.metrics.exposition import render
from rqconc.queue.queue import Queue
from rqconc.worker.registry import list_workers
from tests.dashboard.processes import Dashboard
from tests.support.waiting import wait_for

NAP = "tests.metrics.metrics_jobs:nap"
BOOM = "tests.metrics.metrics_jobs:boom"
TYPES = {
    "rqconc_jobs": "gauge",
    "rqconc_jobs_enqueued": "counter",
    "rqconc_jobs_finished": "counter",
    "rqconc_jobs_failed": "counter",
    "rqconc_jobs_retried": "counter",
    "rqconc_job_run_seconds": "histogram",
    "rqconc_job_wait_seconds": "histogram",
    "rqconc_function_jobs_finished": "counter",
    "rqconc_function_jobs_failed": "counter",
    "rqconc_function_run_seconds": "histogram",
    "rqconc_workers": "gauge",
    "rqconc_children": "gauge",
    "rqconc_worker_jobs": "counter",
    "rqconc_worker_busy_seconds": "counter",
    "rqconc_events_dropped": "counter",
}


def parsed(text):
    """{family name: (type, {(sample name, labels as sorted tuples): value})}."""
    return {
        family.name: (
            family.type,
            {(s.name, tuple(sorted(s.labels.items()))): s.value for s in family.samples},
        )
        for family in text_string_to_metric_families(text)
    }


def value(families, family, sample, **labels):
    return families[family][1][(sample, tuple(sorted(labels.items())))]


def test_metrics_text_parses_with_the_spec_s_names_labels_and_values(
    redis_server, start_worker, tmp_path
):
    url = redis_server.url
    q = Queue("p", connection=url)
    done = [q.enqueue(NAP, 0.01) for _ in range(3)]
    bad = q.enqueue(BOOM, "x", retry=None)
    q.enqueue_in(3600, NAP, 0)
    start_worker("forking", 2, url, "-q", "p", "--name", "w1")
    wait_for(
        lambda: bad.status == "failed" and all(j.status == "finished" for j in done),
        timeout=30,
        message="jobs ended",
    )
    wait_for(
        lambda: (
            [(w["idle"], w["totals"]["finished"]) for w in list_workers(connect(url))] == [(2, 3)]
        ),
        message="idle, its totals written",
    )

    families = parsed(render(url).decode())
    assert {name: kind for name, (kind, _) in families.items()} == TYPES
    ns = {"namespace": "rqconc", "queue": "p"}
    assert value(families, "rqconc_jobs", "rqconc_jobs", status="finished", **ns) == 3
    assert value(families, "rqconc_jobs", "rqconc_jobs", status="scheduled", **ns) == 1
    assert value(families, "rqconc_jobs", "rqconc_jobs", status="failed", **ns) == 1
    for name, expected in (("enqueued", 5), ("finished", 3), ("failed", 1), ("retried", 0)):
        family = f"rqconc_jobs_{name}"
        assert value(families, family, family + "_total", **ns) == expected
    run = families["rqconc_job_run_seconds"][1]
    buckets = sorted(
        (float(dict(labels)["le"]), v)
        for (sample, labels), v in run.items()
        if sample.endswith("_bucket")
    )
    counts = [v for _, v in buckets]
    # cumulative; every run that ended: 3 finished and 1 failed
    assert counts == sorted(counts) and buckets[-1] == (float("inf"), 4)
    assert value(families, "rqconc_job_run_seconds", "rqconc_job_run_seconds_count", **ns) == 4
    assert value(families, "rqconc_job_run_seconds", "rqconc_job_run_seconds_sum", **ns) >= 0.03
    wait_count = "rqconc_job_wait_seconds_count"
    assert value(families, "rqconc_job_wait_seconds", wait_count, **ns) == 4  # started runs
    assert (
        value(families, "rqconc_workers", "rqconc_workers", namespace="rqconc", state="idle") == 1
    )
    children = {"namespace": "rqconc", "worker": "w1"}
    assert value(families, "rqconc_children", "rqconc_children", state="idle", **children) == 2
    assert value(families, "rqconc_children", "rqconc_children", state="busy", **children) == 0
    # SPEC 17: per worker and per function.
    worker_jobs = "rqconc_worker_jobs"
    assert value(families, worker_jobs, worker_jobs + "_total", outcome="finished", **children) == 3
    assert value(families, worker_jobs, worker_jobs + "_total", outcome="failed", **children) == 1
    busy = "rqconc_worker_busy_seconds"
    assert 0.03 <= value(families, busy, busy + "_total", **children) < 60
    for func, finished, failed in ((NAP, 3, 0), (BOOM, 0, 1)):
        labels = {"func": func, **ns}
        for name, expected in (("finished", finished), ("failed", failed)):
            family = f"rqconc_function_jobs_{name}"
            assert value(families, family, family + "_total", **labels) == expected
        run = "rqconc_function_run_seconds"
        assert value(families, run, run + "_count", **labels) == finished + failed
    shown_on_the_dashboard(url, tmp_path)


def shown_on_the_dashboard(url, tmp_path):
    """The workers page's data has each worker's totals; the queue page's, its functions."""
    board = Dashboard(url, tmp_path).wait_ready()
    try:
        status, body = board.request("/api/workers")
        assert status == 200
        (worker,) = json.loads(body)["workers"]
        assert (worker["totals"]["finished"], worker["totals"]["failed"]) == (3, 1)
        status, body = board.request("/api/queues/p/functions")
        assert status == 200
        rows = {row["func"]: row for row in json.loads(body)["functions"]}
        assert set(rows) == {NAP, BOOM}
        assert (rows[NAP]["finished"], rows[NAP]["failed"], rows[BOOM]["failed"]) == (3, 0, 1)
        assert 0.005 <= rows[NAP]["run_p50"] <= rows[NAP]["run_p95"]
    finally:
        board.close()


def test_the_run_histogram_counts_failed_runs_as_well_as_finished_ones(
    redis_server, start_worker, tmp_path
):
    """5 finishing and 2 failing jobs: 7 runs ended, 5 finished, 2 failed, in the /metrics of
    a real dashboard, as wait time counts all 7 starts."""
    url = redis_server.url
    q = Queue("r", connection=url)
    jobs = [q.enqueue(NAP, 0.01) for _ in range(5)]
    jobs += [q.enqueue(BOOM, f"no {i}", retry=None) for i in range(2)]
    start_worker("threading", 2, url, "-q", "r", "--burst").wait_exit(60)
    assert [job.status for job in jobs] == ["finished"] * 5 + ["failed"] * 2
    board = Dashboard(url, tmp_path).wait_ready()
    try:
        status, body = board.request("/metrics")
    finally:
        board.close()
    assert status == 200
    families = parsed(body.decode())
    ns = {"namespace": "rqconc", "queue": "r"}
    run, wait = "rqconc_job_run_seconds", "rqconc_job_wait_seconds"
    assert value(families, run, run + "_count", **ns) == 7
    assert value(families, run, run + "_bucket", le="+Inf", **ns) == 7
    assert value(families, wait, wait + "_count", **ns) == 7
    assert value(families, run, run + "_sum", **ns) >= 0.05  # the five 10 ms naps at least
    for name, expected in (("finished", 5), ("failed", 2), ("retried", 0)):
        family = f"rqconc_jobs_{name}"
        assert value(families, family, family + "_total", **ns) == expected


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "rqconc", "metrics", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_rqconc_metrics_prints_the_same_text_once_and_fails_in_one_line(redis_server):
    url = redis_server.url
    Queue("c", connection=url).enqueue(NAP, 0)
    shown = run_cli("--url", url)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == render(url).decode()
    family = "rqconc_jobs_enqueued"
    assert (
        value(parsed(shown.stdout), family, family + "_total", namespace="rqconc", queue="c") == 1
    )

    bad = run_cli("--url", url, "--namespace", "a b")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "namespace" in bad.stderr
    gone = run_cli("--url", "redis://:secret@127.0.0.1:1/0")
    assert gone.returncode == 1 and len(gone.stderr.strip().splitlines()) == 1
    assert "127.0.0.1:1" in gone.stderr and "secret" not in gone.stderr
