"""The worker side, as hooks (`--hooks rqconc.contrib.otel`, rqconc/worker/hooks.py): every
execution is a CONSUMER span whose parent is the trace context stored at enqueue.

- In the job's own child, `before_job` starts the span (current while the job runs, so the
  job's own spans nest under it) and `after_job`, `on_failure` or `on_retry` ends it.
- The ends the supervisor records once the child is gone (a timeout, a child that died, a
  lost lease, a cancel) find no span of that job open in their process, so they make it
  there: the stored parent, the job's `started_at` as the start, status ERROR. With the
  `threading` backend the child's span is open in the same process and is the one ended.

The SDK (a TracerProvider and its exporter) is the application's to set up, in every
process that reports: the children and the supervisor (docs/opentelemetry.md).
"""

from __future__ import annotations

import threading
from typing import Any, Dict, NamedTuple, Optional, Sequence

from opentelemetry import context, trace
from opentelemetry.trace import Span, SpanKind

from rqconc import __version__
from rqconc.contrib.otel import semconv
from rqconc.contrib.otel.producer import TRACER_NAME, W3C


class Open(NamedTuple):
    span: Span
    token: Any  # the context attached for the job's code (a contextvars Token)
    thread: int


# The spans of the executions running in this process, by job id: a child's, or with the
# threading backend every slot's (one entry per running job, so no two threads share one).
running: Dict[str, Open] = {}


def _tracer() -> trace.Tracer:
    # Asked for at each start: a provider set after this module was imported still counts.
    return trace.get_tracer(TRACER_NAME, __version__)


def _stored(job: Any, *names: str) -> Sequence[Optional[str]]:
    values = job.connection.hmget(job.key, [*semconv.TRACE_FIELDS, *names])
    return [value.decode() if isinstance(value, bytes) else value for value in values]


def _start(job: Any, attempt: int, stored: Sequence[Optional[str]], **extra: Any) -> Span:
    carrier = {n: v for n, v in zip(semconv.TRACE_FIELDS, stored) if v is not None}
    attributes: Dict[str, Any] = semconv.attributes(
        semconv.PROCESS, job.queue_name or "", job.func_name
    )
    attributes[semconv.MESSAGE_ID] = job.id
    attributes[semconv.ATTEMPT] = attempt
    return _tracer().start_span(
        f"{semconv.PROCESS} {job.queue_name}",
        context=W3C.extract(carrier),
        kind=SpanKind.CONSUMER,
        attributes=attributes,
        **extra,
    )


def before_job(job: Any) -> None:
    attempt = int(job.field("attempts") or 0) + 1  # the take's fields: runs ended before
    span = _start(job, attempt, _stored(job))
    token = context.attach(trace.set_span_in_context(span))
    running[job.id] = Open(span, token, threading.get_ident())


def _closed(job: Any) -> Optional[Span]:
    """The span of this execution if it is open in this process (no longer current)."""
    found = running.pop(job.id, None)
    if found is None:
        return None
    # Only the thread that attached it can detach it: a threading worker's supervisor ends
    # the span of a slot it abandoned, whose context goes with that thread.
    if found.thread == threading.get_ident():
        context.detach(found.token)
    return found.span


def _ending(job: Any) -> Span:
    """The span of this execution: open in this process, or made now from what Redis
    holds (the supervisor's ends, once the child is gone)."""
    span = _closed(job)
    if span is None:
        *stored, started_at, attempts = _stored(job, "started_at", "attempts")
        start = int(started_at) * 1_000_000 if started_at else None  # Redis' ms: ns
        # The end is recorded, so this run is counted in `attempts` already.
        span = _start(job, int(attempts or 1), stored, start_time=start)
    return span


def after_job(job: Any, result: Any) -> None:
    span = _closed(job)
    if span is not None:
        span.end()


def on_failure(job: Any, exc_info: Any) -> None:
    span = _ending(job)
    semconv.failed(span, exc_info[1])
    span.end()


def on_retry(job: Any, exc_info: Any, delay: Optional[float]) -> None:
    span = _ending(job)
    semconv.failed(span, exc_info[1])
    if delay is not None:
        span.set_attribute(semconv.RETRY_IN, delay)
    span.end()


def on_cancel(job: Any) -> None:
    span = _ending(job)
    span.set_attribute(semconv.CANCELED, True)  # asked for, not a failure of the job
    span.end()
