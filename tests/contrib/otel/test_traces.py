"""SPEC 16, OpenTelemetry: an enqueue is a PRODUCER span (the SDK's in-memory exporter, in
this process) and every execution a CONSUMER span made in a real worker (written to a file
by tests/contrib/otel/span_file.py, from the forked child or the supervisor), one trace
from enqueue to run; failures, retries, timeouts and children that died end theirs with
status ERROR."""

from __future__ import annotations

import asyncio
import json

import pytest

from rqconc import JobFailed, Queue, Retry
from rqconc.aio import AsyncQueue
from rqconc.contrib import otel
from tests.support.waiting import wait_for

# The first run on a machine installs the SDK (conftest.py) before its first test.
pytestmark = pytest.mark.timeout(180)

HOOKS = ("--hooks", "tests.contrib.otel.span_file", "--hooks", "rqconc.contrib.otel")


@pytest.fixture
def produced(otel_sdk):
    """instrument() on a provider of its own; the PRODUCER spans it exported."""
    # Here, not at the top: the SDK is importable once conftest.py's otel_sdk has run.
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(provider)
    yield exporter
    otel.uninstrument()


def producer_of(exporter, job_id):
    (span,) = [
        s
        for s in exporter.get_finished_spans()
        if s.attributes.get("messaging.message.id") == job_id
    ]
    return span


def consumers(path, job_id, count=1):
    def found():
        lines = path.read_text().splitlines() if path.exists() else []
        spans = [json.loads(line) for line in lines]
        mine = [s for s in spans if s["attributes"].get("messaging.message.id") == job_id]
        return mine if len(mine) >= count else None

    spans = wait_for(found, 20, message=f"{count} consumer span(s) of job {job_id}")
    return sorted(spans, key=lambda s: s["attributes"]["rqconc.attempt"])


def assert_one_trace(producer, consumer):
    assert consumer["kind"] == "CONSUMER"
    assert consumer["trace_id"] == f"{producer.context.trace_id:032x}"
    assert consumer["parent_id"] == f"{producer.context.span_id:016x}"


def exception_of(span):
    (event,) = [e for e in span["events"] if e["name"] == "exception"]
    return event


@pytest.mark.parametrize("backend", ["forking", "threading"])
def test_one_trace_from_enqueue_to_every_end_of_a_run(
    backend, tmp_path, monkeypatch, redis_server, start_worker, produced
):
    spans = tmp_path / "spans.jsonl"
    monkeypatch.setenv("OTEL_SPANS_FILE", str(spans))
    start_worker(backend, 2, redis_server.url, *HOOKS)
    url = redis_server.url
    q = Queue(connection=url)
    ok = q.enqueue("tests.worker.jobs:add", 1, 2)
    failing = q.enqueue("tests.worker.jobs:fail", "boom", retry=Retry(max=1, backoff=0.1))
    late = q.enqueue("tests.worker.jobs:nap", 30, timeout=1, retry=Retry(max=0))
    dying = q.enqueue("tests.worker.ending_jobs:die", url, "t", retry=Retry(max=0))
    batch = q.enqueue_many([("tests.worker.jobs:add", (2, 3)), ("tests.worker.jobs:add", (4, 5))])
    awaited = asyncio.run(AsyncQueue(connection=url).enqueue("tests.worker.jobs:add", 5, 6))

    assert ok.get(timeout=20) == 3
    producer = producer_of(produced, ok.id)
    assert producer.name == "send default" and producer.kind.name == "PRODUCER"
    assert dict(producer.attributes) == {
        "messaging.system": "rqconc",
        "messaging.destination.name": "default",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.message.id": ok.id,
        "rqconc.function": "tests.worker.jobs:add",
    }
    (consumer,) = consumers(spans, ok.id)
    assert_one_trace(producer, consumer)
    assert consumer["name"] == "process default"
    assert consumer["attributes"] == {
        "messaging.system": "rqconc",
        "messaging.destination.name": "default",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.message.id": ok.id,
        "rqconc.function": "tests.worker.jobs:add",
        "rqconc.attempt": 1,
    }
    assert consumer["status"] == "UNSET" and not consumer["events"]

    # A failure records its exception, status ERROR; its retry is a second span, attempt 2.
    with pytest.raises(JobFailed):
        failing.get(timeout=20)
    first, second = consumers(spans, failing.id, 2)
    for attempt, span in enumerate((first, second), 1):
        assert_one_trace(producer_of(produced, failing.id), span)
        assert span["attributes"]["rqconc.attempt"] == attempt
        assert span["status"] == "ERROR" and span["description"] == "ValueError: boom"
        assert exception_of(span)["exception.type"] == "ValueError"
    assert first["attributes"]["rqconc.retry_in"] >= 0

    # A timeout and a child that died: ended from the supervisor, with the stored parent and
    # the run's start.
    for job, error in ((late, "JobTimeout"), (dying, "WorkerLost")):
        with pytest.raises(JobFailed, match=error):
            job.get(timeout=20)
        (span,) = consumers(spans, job.id)
        assert_one_trace(producer_of(produced, job.id), span)
        assert span["status"] == "ERROR" and span["description"].startswith(error)
        assert exception_of(span)["exception.type"] == f"rqconc.errors.{error}"
        assert span["attributes"]["rqconc.attempt"] == 1
    (late_span,) = consumers(spans, late.id)
    assert late_span["end"] - late_span["start"] >= 0.9e9  # from the start it stored

    # enqueue_many: one PRODUCER span for the batch, the parent of each job's run.
    (batch_span,) = [
        s
        for s in produced.get_finished_spans()
        if s.name == "send default" and s.attributes.get("messaging.batch.message_count") == 2
    ]
    for job in batch:
        assert job.get(timeout=20) in (5, 9)
        assert_one_trace(batch_span, consumers(spans, job.id)[0])
    # AsyncQueue: the same.
    assert awaited.id and Queue(connection=url).fetch_job(awaited.id).get(timeout=20) == 11
    assert_one_trace(producer_of(produced, awaited.id), consumers(spans, awaited.id)[0])


def test_without_instrument_an_enqueue_stores_no_trace_context(redis_server):
    job = Queue(connection=redis_server.url).enqueue("tests.worker.jobs:add", 1, 2)
    stored = job.connection.hgetall(job.key)
    assert b"traceparent" not in stored and b"tracestate" not in stored


def test_an_enqueue_that_redis_refuses_ends_its_span_with_the_error(redis_server, produced):
    q = Queue(connection=redis_server.url)
    q.enqueue("tests.worker.jobs:add", 1, 2, job_id="once")
    with pytest.raises(ValueError, match="already exists"):
        q.enqueue("tests.worker.jobs:add", 1, 2, job_id="once")
    refused = [s for s in produced.get_finished_spans() if s.status.status_code.name == "ERROR"]
    (span,) = refused
    assert span.attributes["messaging.message.id"] == "once"
    assert span.events[0].attributes["exception.type"] == "ValueError"
