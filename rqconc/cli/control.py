"""`rqconc suspend [--duration S]` and `rqconc resume`: stop / start taking new jobs."""

from __future__ import annotations

import math
from typing import Optional

import click

from rqconc.cli.common import client_for, namespace_option, replica_options, url_option
from rqconc.cli.limits import resume_queue
from rqconc.queue import control


def _finite_duration(
    ctx: click.Context, param: click.Parameter, value: Optional[float]
) -> Optional[float]:
    if value is not None and not (math.isfinite(value) and value >= 0.001):
        raise click.BadParameter(f"must be a finite number of seconds >= 0.001, not {value}")
    return value


@click.command()
@click.option(
    "--duration",
    type=float,
    default=None,
    callback=_finite_duration,
    metavar="SECONDS",
    help="Resume by themselves after this many seconds.",
)
@url_option
@namespace_option()
def suspend(duration: Optional[float], url: Optional[str], namespace: str) -> None:
    """Make every worker stop taking new jobs of the namespace (busy children finish theirs)."""
    control.suspend(client_for(url), duration, namespace)
    click.echo("workers suspended" + (f" for {duration:g} s" if duration else ""))


@click.command()
@click.argument("queue_name", metavar="[QUEUE]", required=False)
@replica_options
@url_option
@namespace_option()
def resume(
    queue_name: Optional[str],
    wait_replicas: int,
    wait_timeout: float,
    url: Optional[str],
    namespace: str,
) -> None:
    """Let every worker take jobs of the namespace again; with QUEUE, undo `rqconc pause
    QUEUE` instead (--wait-replicas applies to a queue's resume)."""
    if queue_name is not None:
        resume_queue(queue_name, namespace, url, wait_replicas, wait_timeout)
        return
    control.resume(client_for(url), namespace)
    click.echo("workers resumed")
