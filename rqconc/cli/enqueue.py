"""`rqconc enqueue`: put one job on a queue and print its id alone."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Dict, List, Optional, Sequence

import click

from rqconc.cli.common import client_for, namespace_option, replica_options, url_option
from rqconc.cli.limits import limit_enqueue_options, take_limit_options
from rqconc.queue.options import OPTION_NAMES
from rqconc.queue.queue import Queue
from rqconc.queue.retry import Retry


def parse_json_args(values: Sequence[str]) -> List[Any]:
    """Each JSON_ARG as JSON; a bad one is misuse naming it (position and text)."""
    parsed = []
    for position, value in enumerate(values, start=1):
        try:
            parsed.append(json.loads(value))
        except ValueError as exc:
            raise click.BadParameter(
                f"argument {position} {value!r} is not valid JSON ({exc}); quote strings "
                "as JSON, e.g. '\"text\"'",
                param_hint="JSON_ARG",
            ) from None
    return parsed


def parse_at(value: Optional[str]) -> Optional[datetime]:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 time (e.g. 2030-01-31T12:00:00+00:00; naive means UTC)",
            param_hint="--at",
        ) from None


def parse_json_object(value: Optional[str], hint: str) -> Optional[Dict[str, Any]]:
    """`--meta` / `--kwargs`: a JSON object, else misuse naming the option."""
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise click.BadParameter(f"{value!r} is not valid JSON ({exc})", param_hint=hint) from None
    if not isinstance(parsed, dict):
        raise click.BadParameter(f"{value!r} is not a JSON object ({{...}})", param_hint=hint)
    return parsed


def job_options(
    priority: Optional[int],
    timeout: Optional[float],
    soft_timeout: Optional[float],
    retry: Optional[int],
    job_id: Optional[str],
    meta: Optional[str],
) -> Dict[str, Any]:
    """The enqueue options given on the command line (the queue's defaults for the rest)."""
    options: Dict[str, Any] = {
        "priority": priority,
        "timeout": timeout,
        "soft_timeout": soft_timeout,
        "job_id": job_id,
    }
    if retry is not None:
        options["retry"] = Retry(max=retry)
    options["meta"] = parse_json_object(meta, "--meta")
    return {name: value for name, value in options.items() if value is not None}


def later_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """--kwargs for --in / --at, where enqueue_in/enqueue_at would take an argument named
    like an option (timeout, meta, ...) as that option: refused rather than misread."""
    clash = sorted(set(kwargs).intersection(OPTION_NAMES))
    if clash:
        raise click.BadParameter(
            f"with --in or --at, --kwargs cannot name enqueue options ({', '.join(clash)})",
            param_hint="--kwargs",
        )
    return kwargs


# A negative number is a JSON argument, not an unknown option (`rqconc enqueue ... f:g -5`).
@click.command(context_settings={"ignore_unknown_options": True})
@click.option("-q", "--queue", "queue_name", required=True, help="The queue to put the job on.")
@click.option(
    "--priority",
    type=click.IntRange(0, 100),
    default=None,
    help="0 to 100, higher runs first (default 1).",
)
@click.option(
    "--in",
    "delay",
    type=click.FloatRange(min=0),
    default=None,
    metavar="SECONDS",
    help="Run no earlier than SECONDS from now.",
)
@click.option(
    "--at",
    "at",
    default=None,
    metavar="ISO",
    help="Run no earlier than this ISO 8601 time (naive means UTC).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Fail the job with JobTimeout after SECONDS (default 180).",
)
@click.option(
    "--soft-timeout",
    type=float,
    default=None,
    metavar="SECONDS",
    help="Raise JobSoftTimeout inside the job after SECONDS (below --timeout), to clean up.",
)
@click.option(
    "--retry",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Retry up to N times (rqconc.Retry(max=N): exponential backoff, jitter).",
)
@click.option("--job-id", default=None, help="The job's id (refused if a job has it already).")
@click.option("--meta", default=None, metavar="JSON", help="A JSON object stored as job.meta.")
@click.option(
    "--kwargs",
    "kwargs_json",
    default=None,
    metavar="JSON",
    help="A JSON object of keyword arguments for the function.",
)
@limit_enqueue_options
@replica_options
@url_option
@namespace_option()
@click.argument("function", metavar="module:function")
@click.argument("json_args", nargs=-1, metavar="[JSON_ARG]...")
def enqueue(
    queue_name: str,
    delay: Optional[float],
    at: Optional[str],
    kwargs_json: Optional[str],
    namespace: str,
    url: Optional[str],
    function: str,
    json_args: Sequence[str],
    wait_replicas: int,
    wait_timeout: float,
    **given: Any,
) -> None:
    """Enqueue module:function(*JSON_ARGs, **--kwargs) and print the new job's id."""
    if delay is not None and at is not None:
        raise click.UsageError("--in and --at exclude each other: give one of them")
    args = parse_json_args(json_args)
    kwargs = parse_json_object(kwargs_json, "--kwargs") or {}
    when = parse_at(at)
    flow = take_limit_options(given)
    options = {**job_options(**given), **flow}
    try:
        queue = Queue(
            queue_name, connection=client_for(url), namespace=namespace,
            wait_replicas=wait_replicas, wait_timeout=wait_timeout,
        )  # fmt: skip
        if delay is not None:
            job = queue.enqueue_in(delay, function, *args, **later_kwargs(kwargs), **options)
        elif when is not None:
            job = queue.enqueue_at(when, function, *args, **later_kwargs(kwargs), **options)
        else:
            job = queue.enqueue_call(function, args, kwargs, **options)
    except (ValueError, TypeError, RuntimeError) as exc:  # RuntimeError: what eager refuses
        raise click.UsageError(str(exc)) from None
    click.echo(job.id)
