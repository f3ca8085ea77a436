"""Webhooks: an HTTP POST with a JSON description of a job that ended.

Delivered by a follow-up job (see callbacks.py), so retries use the job machinery:
connection errors, timeouts, HTTP 429 and 5xx raise `WebhookUnavailable`, which the
webhook job's Retry policy retries with backoff; other 4xx raise `WebhookRejected`, final.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any, Dict
from urllib.parse import urlsplit, urlunsplit

from rqconc import errors
from rqconc.queue.workflow.callbacks import webhook_timeout


class WebhookUnavailable(errors.RQConcError):
    """The endpoint could not take the webhook now (retried)."""


class WebhookRejected(errors.RQConcError):
    """The endpoint refused the webhook for good (a 4xx other than 429)."""


def _shown(url: str) -> str:
    """The URL without credentials: errors and logs never carry a password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def describe(job: Any, outcome: Any) -> Dict[str, Any]:
    """The JSON body: the job and its outcome."""
    body: Dict[str, Any] = {
        "id": job.id,
        "queue": job.queue_name,
        "func": job.func_name,
        "description": job.description,
        "meta": job.meta,
    }
    if isinstance(outcome, errors.JobFailed):
        body.update(
            status="failed", error={"type": outcome.exc_type, "message": outcome.exc_message}
        )
    else:
        body.update(status="finished", result=outcome)
    for name in ("enqueued_at", "started_at", "ended_at"):
        value = getattr(job, name)
        body[name] = value.isoformat() if value else None
    return body


def deliver(job: Any, outcome: Any, url: str) -> int:
    """POST the description of `job` to `url`; returns the HTTP status."""
    data = json.dumps(describe(job, outcome), default=str).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "rqconc-webhook"},
    )
    try:
        with urllib.request.urlopen(request, timeout=webhook_timeout()) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        if exc.code == 429 or exc.code >= 500:
            raise WebhookUnavailable(f"{_shown(url)} answered HTTP {exc.code}") from None
        raise WebhookRejected(f"{_shown(url)} refused the webhook: HTTP {exc.code}") from None
    except (urllib.error.URLError, socket.timeout, ConnectionError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise WebhookUnavailable(f"cannot reach {_shown(url)}: {reason}") from None
