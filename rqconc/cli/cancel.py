"""`rqconc cancel ID ...`: cancel jobs (a running one is stopped by its worker within 2 s)."""

from __future__ import annotations

from typing import Optional, Sequence

import click

from rqconc import errors
from rqconc.cli.common import client_for, namespace_option, replica_options, url_option
from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.job import Job


@click.command()
@click.argument("job_ids", metavar="ID...", nargs=-1, required=True)
@replica_options
@url_option
@namespace_option()
def cancel(
    job_ids: Sequence[str],
    wait_replicas: int,
    wait_timeout: float,
    url: Optional[str],
    namespace: str,
) -> None:
    """Cancel jobs: waiting ones at once, running ones within 2 s. Exits 1 if one of them
    does not exist."""
    client = client_for(url)
    missing = []
    for job_id in job_ids:
        job = Job(job_id, client, namespace)
        job.wait = ReplicaWait(wait_replicas, wait_timeout)
        try:
            with translated_errors(client):
                canceled = job.cancel()
        except errors.NoSuchJob:
            missing.append(job_id)
            continue
        click.echo(f"{job_id}  {'canceled' if canceled else 'already ended'}")
    if missing:
        raise click.ClickException(f"no such job: {', '.join(missing)}")
