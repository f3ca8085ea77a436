"""A worker's hooks module for the tests (`--hooks tests.contrib.otel.span_file --hooks
rqconc.contrib.otel`): imported, it sets up the OpenTelemetry SDK with an exporter that
appends each span ended in any process of the worker (a forked child, the supervisor) as
one JSON line to $OTEL_SPANS_FILE, which the test reads."""

from __future__ import annotations

import json
import os
from typing import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


def described(span: ReadableSpan) -> dict:
    parent = span.parent
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{span.context.trace_id:032x}",
        "span_id": f"{span.context.span_id:016x}",
        "parent_id": f"{parent.span_id:016x}" if parent else None,
        "attributes": dict(span.attributes or {}),
        "status": span.status.status_code.name,
        "description": span.status.description,
        "events": [{"name": e.name, **dict(e.attributes or {})} for e in span.events],
        "start": span.start_time,
        "end": span.end_time,
        "pid": os.getpid(),
    }


class SpanFile(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(described(span)) + "\n" for span in spans)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:  # one write of whole lines: processes appending at once never interleave
            os.write(fd, lines.encode())
        finally:
            os.close(fd)
        return SpanExportResult.SUCCESS


# At import, in the supervisor: forked children inherit the provider (a spawned child of
# multiprocessing imports this module again). Synchronous export: a child may be ended
# right after its job, before a batch processor's thread would have sent anything.
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(SpanFile(os.environ["OTEL_SPANS_FILE"])))
trace.set_tracer_provider(provider)


def on_worker_start(worker) -> None:
    """A hooks module must have a hook: the set-up above is what this one is for."""
