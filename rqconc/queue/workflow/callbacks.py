"""Callbacks and webhooks run as follow-up jobs.

`on_success(job, result)`, `on_failure(job, error)`, `success_url` and `failure_url` are
turned, at enqueue time, into job specs stored on the job (fields on_success_jobs and
on_failure_jobs). The Lua step that ends the job for good creates those jobs in the same
atomic step (lua/include/followups.lua), in the job's queue. So a callback runs exactly
when its job's outcome is recorded, whichever process recorded it (a child, a supervisor
that saw a timeout, the recovery of a vanished worker), it runs in a worker child under
the allow-list, and webhooks get the retry machinery of any job: a failing webhook fails
its own follow-up job, never the job it reports on.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from rqconc import errors
from rqconc.queue.retry import Retry
from rqconc.queue.running import in_a_job
from rqconc.queue.serialization import check_defined, function_name, get_serializer

# The timeout of a follow-up job (a callback or a webhook) is the worker's that runs it
# (`--callback-timeout`, this by default): the specs below carry none.
CALLBACK_TIMEOUT = 60
WEBHOOK_FUNCTION = "rqconc.worker.webhooks:deliver"
# 429/5xx, connection errors and timeouts: the webhook's own job is retried with backoff.
WEBHOOK_RETRY = Retry(
    max=5, backoff=1.0, factor=2.0, max_delay=30, on=["rqconc.worker.webhooks.WebhookUnavailable"]
)
# How long one webhook POST may take, as the seed's webhooks had; a worker sets its own
# (`--webhook-timeout`, `Supervisor(webhook_timeout=...)`) in each child it starts. Kept
# here, apart from the HTTP client of the webhook job (rqconc.worker.webhooks), so that a
# worker that delivers no webhook never imports urllib.request and http.client.
WEBHOOK_TIMEOUT = 15.0
_webhook_timeout = WEBHOOK_TIMEOUT


def set_webhook_timeout(seconds: float) -> None:
    """The timeout of the webhooks this process delivers from now on (one per process: the
    children of one worker share it, as they share the worker's settings)."""
    global _webhook_timeout
    _webhook_timeout = seconds


def webhook_timeout() -> float:
    return _webhook_timeout


def _spec(
    name: str,
    func: str,
    kwargs: Dict[str, Any],
    parent: Dict[str, str],
    retry: Optional[Retry] = None,
) -> Dict[str, Any]:
    # Like every job's hash, only fields that differ from their defaults (rqconc/job.py):
    # the parent's priority and TTLs are copied when it has its own.
    fields = {
        "func": func,
        "queue": parent["queue"],
        "description": f"{name} of job",
    }
    if kwargs:
        fields["kwargs"] = json.dumps(kwargs)
    if "serializer" in parent:
        fields["parent_serializer"] = parent["serializer"]
    for setting in ("priority", "result_ttl", "failure_ttl"):
        if setting in parent:
            fields[setting] = parent[setting]
    if retry is not None:
        fields["retry"] = retry.to_json()
    return {"name": name, "fields": fields}


def _callback_name(func: Any) -> str:
    """A callback's stored name; a name is checked as a job's is (job_fields.py)."""
    name = function_name(func)
    return check_defined(name, may_import=not in_a_job()) if isinstance(func, str) else name


def followup_fields(queue: str, parent: Dict[str, str], options: Dict[str, Any]) -> Dict[str, str]:
    """The hash fields holding a job's follow-up specs, from its enqueue options and the
    fields `parent` shares with its batch (queue, and serializer, priority, TTLs if not the
    defaults)."""
    success: List[Dict[str, Any]] = []
    failure: List[Dict[str, Any]] = []
    if options.get("on_success") is not None:
        success.append(_spec("on_success", _callback_name(options["on_success"]), {}, parent))
    if options.get("on_failure") is not None:
        failure.append(_spec("on_failure", _callback_name(options["on_failure"]), {}, parent))
    for name, specs in (("success_url", success), ("failure_url", failure)):
        url = options.get(name)
        if url is not None:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ValueError(f"{name} must be an http:// or https:// URL, not {url!r}")
            specs.append(_spec(name, WEBHOOK_FUNCTION, {"url": url}, parent, WEBHOOK_RETRY))
    fields = {}
    if success:
        fields["on_success_jobs"] = json.dumps(success)
    if failure:
        fields["on_failure_jobs"] = json.dumps(failure)
    return fields


def callback_arguments(fields: Dict[str, str], parent: Any) -> Tuple[Any, Any]:
    """(job, result) or (job, error) for the callback a follow-up job runs; `error` is a
    `rqconc.JobFailed` carrying the remote type, message and traceback."""
    if fields.get("callback_kind") == "success":
        serializer = get_serializer(fields.get("parent_serializer", "json"))
        return parent, serializer.loads(fields.get("parent_result", "null"))
    exc_type, message, trace = json.loads(fields.get("parent_exc", '["", "", ""]'))
    return parent, errors.JobFailed(parent.id, exc_type, message, trace)
