"""`rqconc metrics [--url URL] [--namespace NS]`: the Prometheus text format, printed once
(SPEC 9): the same text the dashboard serves at GET /metrics."""

from __future__ import annotations

import sys
from typing import Optional

import click

from rqconc.cli.common import client_for, namespace_option, url_option
from rqconc.metrics.exposition import render


@click.command()
@namespace_option()
@url_option
def metrics(namespace: str, url: Optional[str]) -> None:
    """Print every queue's counters and histograms, jobs by status, and the workers and
    their children, in the Prometheus text format."""
    sys.stdout.buffer.write(render(client_for(url), namespace))
    sys.stdout.flush()
