"""OpenTelemetry traces of rqconc (SPEC 16, docs/opentelemetry.md; the `otel`
extra): `instrument()` in producers, and this module as a worker's hooks
(`rqconc worker --hooks rqconc.contrib.otel`, or `Supervisor(hooks=[rqconc.contrib.otel])`).
"""

from __future__ import annotations

try:
    import opentelemetry.trace  # noqa: F401
except ImportError:  # one line, not a traceback of the import below
    raise ImportError(
        "rqconc.contrib.otel needs OpenTelemetry's API: install rqconc's `otel` extra"
    ) from None

from rqconc.contrib.otel.consumer import (
    after_job,
    before_job,
    on_cancel,
    on_failure,
    on_retry,
)
from rqconc.contrib.otel.producer import instrument, uninstrument

__all__ = [
    "after_job",
    "before_job",
    "instrument",
    "on_cancel",
    "on_failure",
    "on_retry",
    "uninstrument",
]
