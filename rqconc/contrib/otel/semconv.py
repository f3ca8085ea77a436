"""The names OpenTelemetry's messaging conventions give a span's attributes (semantic
conventions 1.27 and later: `messaging.operation.type` is `send` or `process`), written out:
the conventions package is still incubating and not a dependency of `rqconc[otel]`."""

from __future__ import annotations

from typing import Dict, Optional

from opentelemetry.trace import Span, Status, StatusCode

SYSTEM = "messaging.system"
DESTINATION = "messaging.destination.name"
MESSAGE_ID = "messaging.message.id"
OPERATION_TYPE = "messaging.operation.type"
OPERATION_NAME = "messaging.operation.name"
BATCH_COUNT = "messaging.batch.message_count"
FUNCTION = "rqconc.function"
ATTEMPT = "rqconc.attempt"
RETRY_IN = "rqconc.retry_in"
CANCELED = "rqconc.canceled"
TRACE_FIELDS = ("traceparent", "tracestate")  # the job's hash fields: W3C's header names

SEND, PROCESS = "send", "process"


def attributes(operation: str, queue: str, function: Optional[str]) -> Dict[str, str]:
    """What every span of rqconc has; a span's name is `{operation} {queue}`."""
    found = {SYSTEM: "rqconc", DESTINATION: queue, OPERATION_TYPE: operation}
    found[OPERATION_NAME] = operation
    if function:
        found[FUNCTION] = function
    return found


def failed(span: Span, error: BaseException) -> None:
    """The span of an operation that raised: the exception as an event, status ERROR."""
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
