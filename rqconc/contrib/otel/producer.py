"""The producer side: `instrument()` makes every enqueue (Queue and AsyncQueue, `@task`
functions, `enqueue_many`, `enqueue_in/at`) a PRODUCER span and stores its W3C trace
context with the jobs, in their `traceparent` / `tracestate` hash fields. One span per
enqueue call: a batch's jobs share it, and its `messaging.batch.message_count` says how many.

Until `instrument()` is called an enqueue pays one check (rqconc.set_enqueue_tracing) and
stores nothing more. Groups (`enqueue_group`) are not traced.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence, Tuple

from opentelemetry import trace
from opentelemetry.trace import SpanKind, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from rqconc import __version__, set_enqueue_tracing
from rqconc.contrib.otel import semconv

Sent = Callable[[Optional[BaseException]], None]  # ends an enqueue's span, with its error

# The W3C format itself, not the global propagator: a worker reads it back whatever the
# producer's process configured (B3, Jaeger...).
W3C = TraceContextTextMapPropagator()
TRACER_NAME = "rqconc.contrib.otel"


class Producer:
    """The enqueue tracing: a span per enqueue, its context in the jobs' fields."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self.tracer = tracer

    def __call__(
        self, queue: str, jobs: Sequence[Tuple[str, Dict[str, str]]]
    ) -> Tuple[Dict[str, str], Sent]:
        first_id, first = jobs[0]
        attributes = semconv.attributes(semconv.SEND, queue, first.get("func"))
        if len(jobs) == 1:
            attributes[semconv.MESSAGE_ID] = first_id
        else:
            attributes[semconv.BATCH_COUNT] = len(jobs)  # type: ignore[assignment]
        span = self.tracer.start_span(
            f"{semconv.SEND} {queue}", kind=SpanKind.PRODUCER, attributes=attributes
        )
        carrier: Dict[str, str] = {}
        # Nothing is written for a span that is not sampled or has no provider behind it.
        W3C.inject(carrier, context=trace.set_span_in_context(span))

        def sent(error: Optional[BaseException]) -> None:
            if error is not None:
                semconv.failed(span, error)
            span.end()

        return carrier, sent


def instrument(tracer_provider: Optional[TracerProvider] = None) -> None:
    """Trace every enqueue of this process from now on (the global tracer provider unless
    one is given). Calling it again replaces the provider."""
    set_enqueue_tracing(Producer(trace.get_tracer(TRACER_NAME, __version__, tracer_provider)))


def uninstrument() -> None:
    """Stop tracing enqueues: they store no trace context again."""
    set_enqueue_tracing(None)
