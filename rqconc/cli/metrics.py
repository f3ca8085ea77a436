"""`rqconc metrics [--url URL] [--namespace NS]`: the Prometheus text format, printed once
(SPEC 9): the same text the dashboard serves at GET /metrics."""

from __future__ import annotations

import sys
from typing import Optional

import click

from rqconc.cli.common import client_for, url_option
from rqconc.metrics.exposition import render
from rqconc.queue.keys import KeySpace


@click.command()
@click.option(
    "--namespace",
    envvar="RQCONC_NAMESPACE",
    default="rqconc",
    show_default=True,
    help="The namespace whose metrics to print (env: RQCONC_NAMESPACE).",
)
@url_option
def metrics(namespace: str, url: Optional[str]) -> None:
    """Print every queue's counters and histograms, jobs by status, and the workers and
    their children, in the Prometheus text format."""
    try:
        KeySpace(namespace)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--namespace") from None
    sys.stdout.buffer.write(render(client_for(url), namespace))
    sys.stdout.flush()
