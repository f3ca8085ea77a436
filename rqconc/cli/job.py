"""`rqconc job ID [--json] [--logs]`: one job's state, call, timestamps and outcome, or the
lines it logged (SPEC 17)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Dict, Optional

import click

from rqconc import errors
from rqconc.cli.common import client_for, namespace_option, url_option, when
from rqconc.connection.clients import translated_errors
from rqconc.queue.job import Job


def one_moment(job: Job) -> None:
    """The fields fetched with a job and its live state (status, attempts) may lie on either
    side of a change: a job that finished between the two reads showed `finished` without
    its `ended_at`. Fetched again until they agree; the report then reads the fetch."""
    for _ in range(3):
        job.refresh()
        if job.field("status") == str(job.status):
            return


def _elapsed(job: Job, started_at: datetime) -> float:
    """Seconds a running job has run, on Redis' clock, which stamped started_at (this
    host's clock may differ)."""
    seconds, micros = job.connection.time()
    now = datetime.fromtimestamp(seconds + micros / 1e6, tz=timezone.utc)
    return round((now - started_at).total_seconds(), 3)


def describe_job(job: Job) -> Dict[str, Any]:
    """Everything `rqconc job` shows, JSON-ready (times as ISO 8601 UTC)."""
    one_moment(job)
    report: Dict[str, Any] = {
        "id": job.id,
        "status": job.field("status"),
        "function": job.func_name,
        "queue": job.queue_name,
        "priority": job.priority,
        "attempts": int(job.field("attempts") or 0),
        "description": job.description,
        "worker": job.worker_name,
        "created_at": when(job.created_at),
        "enqueued_at": when(job.enqueued_at),
        "started_at": when(job.started_at),
        "ended_at": when(job.ended_at),
    }
    links = {
        "depends_on": job.depends_on or None,
        "callback_of": job.callback_of,
        "flow_id": job.flow_id,
        "next_id": job.next_id,
    }
    report.update({name: value for name, value in links.items() if value})
    report["lost"] = job.lost  # leases lost: its worker vanished mid-run that many times
    log_tag = job.meta.get("log_tag")
    if log_tag is not None:
        report["log_tag"] = log_tag
    if report["status"] == "started" and job.started_at is not None:
        report["elapsed"] = _elapsed(job, job.started_at)
    report.update(_progress(job))
    if job.serializer == "json":  # pickled arguments stay opaque here
        report["args"], report["kwargs"] = job.args, job.kwargs
    if report["status"] == "finished":
        report["result"] = job.return_value if job.serializer == "json" else "<pickled>"
    failure = job.exc_info
    if failure is not None:
        report["error"] = {"type": failure[0], "message": failure[1], "traceback": failure[2]}
    return report


def _progress(job: Job) -> Dict[str, Any]:
    """{"progress": {"percent", "message"}} as the job last reported it (job.set_progress),
    or nothing before it reported any."""
    fraction = job.field("progress")
    if fraction is None:
        return {}
    return {
        "progress": {"percent": percent(float(fraction)), "message": job.field("progress_message")}
    }


def percent(fraction: float) -> float:
    """A fraction (0..1) as a percentage with at most one decimal: 1/3 is 33.3, not
    33.333333333333336."""
    return round(fraction * 100, 1)


def render(report: Dict[str, Any]) -> str:
    lines = []
    for name, value in report.items():
        if name == "error":
            lines.append(f"{'error':<12} {value['type']}: {value['message']}")
            lines.extend("  " + line for line in value["traceback"].splitlines())
        elif name == "progress":
            message = f" · {value['message']}" if value["message"] else ""
            lines.append(f"{name:<12} {value['percent']:g} %{message}")
        elif name == "elapsed":
            lines.append(f"{name:<12} {value:.1f} s (running)")
        elif name in ("args", "kwargs", "result"):
            lines.append(f"{name:<12} {json.dumps(value)}")
        else:
            lines.append(f"{name:<12} {'-' if value is None else value}")
    return "\n".join(lines)


@click.command()
@click.argument("job_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--logs",
    is_flag=True,
    help="Print the lines the job logged (job.log(), the rqconc.job logger), oldest first.",
)
@url_option
@namespace_option()
def job(job_id: str, as_json: bool, logs: bool, url: Optional[str], namespace: str) -> None:
    """Show one job: status, function, queue, priority, attempts, leases lost, log_tag,
    times (and how long a running job has run), result or error; with --logs, its log."""
    client = client_for(url)
    try:
        with translated_errors(client):
            found = Job.fetch(job_id, client, namespace)
            if logs:
                _print_logs(found, as_json)
                return
            report = describe_job(found)
    except errors.NoSuchJob:
        raise click.ClickException(f"no such job {job_id}") from None
    except (ValueError, TypeError, KeyError) as exc:  # a stored field no longer reads back
        raise click.ClickException(
            f"job {job_id} has corrupt stored data ({type(exc).__name__}: {exc}); "
            "`rqconc job ID` cannot show it"
        ) from None
    click.echo(json.dumps(report) if as_json else render(report))


def _print_logs(job: Job, as_json: bool) -> None:
    lines = job.logs()
    if as_json:
        click.echo(json.dumps({"id": job.id, "status": str(job.status), "logs": lines}))
    elif lines:
        click.echo("\n".join(lines))
    else:
        click.echo(f"job {job.id} logged nothing", err=True)
