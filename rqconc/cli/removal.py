"""What deletes, from the command line (SPEC 17): `rqconc empty QUEUE`, `rqconc delete QUEUE`
and `rqconc job delete ID...`, each through the client API (q.empty(), q.delete(),
job.delete()), each asking first on a terminal unless --yes. Off a terminal without --yes
they refuse: a script that forgot --yes must not hang on a question nor delete unasked.
"""

from __future__ import annotations

import sys
from typing import Any, List, Optional, Sequence

import click

from rqconc import errors
from rqconc.cli.common import (
    client_for,
    namespace_option,
    plural,
    replica_options,
    url_option,
)
from rqconc.cli.job import job as show_job
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.job import Job
from rqconc.queue.queue import Queue

yes_option = click.option("--yes", "-y", is_flag=True, help="Do not ask: delete.")


def confirmed(question: str, yes: bool) -> None:
    """Return if the user agreed (or gave --yes); otherwise stop with one line, exit 1."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.ClickException(f"{question} Not on a terminal: give --yes to confirm")
    if not click.confirm(question, default=False):
        raise click.ClickException("nothing deleted")


def _queue(name: str, namespace: str, url: Optional[str], **wait: Any) -> Queue:
    try:
        return Queue(name, connection=client_for(url), namespace=namespace, **wait)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@yes_option
@replica_options
@url_option
@namespace_option()
def empty(
    queue_name: str,
    yes: bool,
    wait_replicas: int,
    wait_timeout: float,
    url: Optional[str],
    namespace: str,
) -> None:
    """Delete every waiting job of QUEUE (not scheduled, running or ended ones)."""
    queue = _queue(
        queue_name, namespace, url, wait_replicas=wait_replicas, wait_timeout=wait_timeout
    )
    confirmed(f"Delete every waiting job of queue {queue_name}?", yes)
    click.echo(f"deleted {plural(queue.empty(), 'job')} of queue {queue_name}")


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@yes_option
@replica_options
@url_option
@namespace_option()
def delete(
    queue_name: str,
    yes: bool,
    wait_replicas: int,
    wait_timeout: float,
    url: Optional[str],
    namespace: str,
) -> None:
    """Delete QUEUE: its cron entries and every job of it that is not running (running ones
    finish as usual)."""
    queue = _queue(
        queue_name, namespace, url, wait_replicas=wait_replicas, wait_timeout=wait_timeout
    )
    confirmed(f"Delete queue {queue_name} and every job of it that is not running?", yes)
    click.echo(f"deleted queue {queue_name} ({plural(queue.delete(), 'job')})")


class JobCommands(click.Group):
    """`rqconc job ID` shows a job (the `show` subcommand, named or not); `rqconc job delete
    ID...` deletes jobs."""

    def parse_args(self, ctx: click.Context, args: List[str]) -> List[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


@click.group(cls=JobCommands)
def job() -> None:
    """One job: `rqconc job ID [--json]` shows it, `rqconc job delete ID...` deletes it."""


job.add_command(show_job, name="show")


@job.command(name="delete")
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@yes_option
@replica_options
@url_option
@namespace_option()
def delete_jobs(
    job_ids: Sequence[str],
    yes: bool,
    wait_replicas: int,
    wait_timeout: float,
    url: Optional[str],
    namespace: str,
) -> None:
    """Delete jobs that are not running (cancel a running one first). Exits 1 if one could
    not be deleted."""
    client = client_for(url)
    confirmed(f"Delete {plural(len(job_ids), 'job')}?", yes)
    refused = []
    for job_id in job_ids:
        found = Job(job_id, client, namespace)
        found.wait = ReplicaWait(wait_replicas, wait_timeout)
        try:
            deleted = found.delete()
        except ValueError as exc:  # running
            refused.append(str(exc))
            continue
        except errors.NoSuchJob:
            deleted = False
        if not deleted:
            refused.append(f"no such job {job_id}")
            continue
        click.echo(f"{job_id}  deleted")
    if refused:
        raise click.ClickException("; ".join(refused))
