"""`rqconc ping [--worker NAME]`: is Redis (or one worker) alive?"""

from __future__ import annotations

from typing import Optional

import click

from rqconc.cli.common import client_for, namespace_option, url_option
from rqconc.connection.clients import describe, translated_errors
from rqconc.store.steps.core import text
from rqconc.worker.registry import heartbeat_age


@click.command()
@click.option(
    "--worker",
    "worker_name",
    default=None,
    metavar="NAME",
    help="Succeed only if this worker is registered and heartbeating.",
)
@url_option
@namespace_option()
def ping(worker_name: Optional[str], url: Optional[str], namespace: str) -> None:
    """Print PONG and the server when Redis answers (exit 1 otherwise)."""
    client = client_for(url)
    with translated_errors(client):
        client.ping()
        version = text(client.info("server").get("redis_version", "?"))
    if worker_name is None:
        click.echo(f"PONG {describe(client)} (Redis {version})")
        return
    with translated_errors(client):
        age = heartbeat_age(client, worker_name, namespace)
    if age is None:
        raise click.ClickException(
            f"worker {worker_name!r} is not registered or missed its heartbeats "
            f"in namespace {namespace!r} on {describe(client)}"
        )
    click.echo(f"PONG worker {worker_name} (last heartbeat {age:.1f}s ago) on {describe(client)}")
