"""`rqconc enqueue`: put one job on a queue and print its id alone."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, List, Optional, Sequence

import click

from rqconc.cli.common import client_for, url_option
from rqconc.queue.queue import Queue


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
@url_option
@click.argument("function", metavar="module:function")
@click.argument("json_args", nargs=-1, metavar="[JSON_ARG]...")
def enqueue(
    queue_name: str,
    priority: Optional[int],
    delay: Optional[float],
    at: Optional[str],
    url: Optional[str],
    function: str,
    json_args: Sequence[str],
) -> None:
    """Enqueue module:function(*JSON_ARGs) and print the new job's id."""
    if delay is not None and at is not None:
        raise click.UsageError("--in and --at exclude each other: give one of them")
    args = parse_json_args(json_args)
    when = parse_at(at)
    options = {} if priority is None else {"priority": priority}
    try:
        queue = Queue(queue_name, connection=client_for(url))
        if delay is not None:
            job = queue.enqueue_in(delay, function, *args, **options)
        elif when is not None:
            job = queue.enqueue_at(when, function, *args, **options)
        else:
            job = queue.enqueue_call(function, args, None, **options)
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(job.id)
