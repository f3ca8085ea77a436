"""`rqconc failed list|show ID|purge` and `rqconc requeue --all | ID ...`: the dead letters."""

from __future__ import annotations

import json
from typing import Any, List, Optional, Tuple

import click
import redis

from rqconc.cli.common import (
    client_for,
    namespace_option,
    one_line,
    plural,
    replica_options,
    table,
    url_option,
)
from rqconc.cli.job import describe_job, render
from rqconc.connection.clients import translated_errors
from rqconc.queue.counts import queue_names
from rqconc.queue.queue import Queue

queue_option = click.option(
    "-q", "--queue", "queue_name", default=None, help="Only this queue (default: every queue)."
)


def _queues(
    client: redis.Redis, queue_name: Optional[str], namespace: str, **wait: Any
) -> List[Queue]:
    """The queue given, or every queue; `wait`: --wait-replicas and --wait-timeout."""
    names = [queue_name] if queue_name else queue_names(client, namespace)
    return [Queue(name, connection=client, namespace=namespace, **wait) for name in names]


@click.group()
def failed() -> None:
    """The dead-letter registry: jobs that failed for good."""


@failed.command(name="list")
@queue_option
@click.option("--json", "as_json", is_flag=True)
@url_option
@namespace_option()
def list_failed(
    queue_name: Optional[str], as_json: bool, url: Optional[str], namespace: str
) -> None:
    """List dead letters: id, queue, function, attempts, error."""
    client = client_for(url)
    with translated_errors(client):
        rows = []
        for q in _queues(client, queue_name, namespace):
            for job in q.failed.jobs():
                exc = job.exc_info or ("", "", "")
                rows.append(
                    [
                        job.id,
                        q.name,
                        job.func_name or "",
                        job.attempts,
                        one_line(f"{exc[0]}: {exc[1]}"),
                    ]
                )
    if as_json:
        keys = ("id", "queue", "function", "attempts", "error")
        click.echo(json.dumps([dict(zip(keys, row)) for row in rows]))
    elif rows:
        click.echo(table(["ID", "QUEUE", "FUNCTION", "ATTEMPTS", "ERROR"], rows))
    else:
        click.echo("no dead letters")


@failed.command(name="show")
@click.argument("job_id")
@url_option
@namespace_option()
def show_failed(job_id: str, url: Optional[str], namespace: str) -> None:
    """Show one dead letter with its traceback."""
    client = client_for(url)
    with translated_errors(client):
        for q in _queues(client, None, namespace):
            if job_id in q.failed:
                click.echo(render(describe_job(q.fetch_job(job_id))))
                return
    raise click.ClickException(f"no dead letter {job_id}")


@failed.command(name="purge")
@queue_option
@replica_options
@url_option
@namespace_option()
def purge_failed(
    queue_name: Optional[str],
    wait_replicas: int,
    wait_timeout: float,
    url: Optional[str],
    namespace: str,
) -> None:
    """Delete every dead letter (of one queue with -q)."""
    client = client_for(url)
    wait = {"wait_replicas": wait_replicas, "wait_timeout": wait_timeout}
    with translated_errors(client):
        deleted = sum(q.failed.purge() for q in _queues(client, queue_name, namespace, **wait))
    click.echo(f"purged {plural(deleted, 'dead letter')}")


@click.command()
@click.option("--all", "requeue_all", is_flag=True, help="Every dead letter.")
@queue_option
@click.argument("job_ids", nargs=-1)
@replica_options
@url_option
@namespace_option()
def requeue(
    requeue_all: bool,
    queue_name: Optional[str],
    job_ids: Tuple[str, ...],
    wait_replicas: int,
    wait_timeout: float,
    url: Optional[str],
    namespace: str,
) -> None:
    """Run dead letters again (same id, attempts reset): --all, or the ids given."""
    if requeue_all == bool(job_ids):
        raise click.UsageError("give either --all or one or more job ids")
    client = client_for(url)
    wait = {"wait_replicas": wait_replicas, "wait_timeout": wait_timeout}
    with translated_errors(client):
        queues = _queues(client, queue_name, namespace, **wait)
        if requeue_all:
            count = sum(q.failed.requeue_all() for q in queues)
        else:
            try:
                missing = [i for i in job_ids if not any(q.failed.requeue(i) for q in queues)]
            except ValueError as exc:  # another job holds its unique key
                raise click.ClickException(str(exc)) from None
            if missing:
                raise click.ClickException(f"not dead letters: {' '.join(missing)}")
            count = len(job_ids)
    click.echo(f"requeued {plural(count, 'job')}")
