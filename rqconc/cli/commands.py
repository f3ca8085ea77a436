"""The `rqconc` inspection and management commands: info, enqueue, job, ping, server,
suspend, resume, failed, requeue, cancel, events, cron, dashboard, cluster, limits, pause,
jobs, empty, delete."""

from __future__ import annotations

import click

from rqconc.cli.cancel import cancel
from rqconc.cli.cluster import cluster
from rqconc.cli.control import resume, suspend
from rqconc.cli.cron import cron
from rqconc.cli.dashboard import dashboard
from rqconc.cli.enqueue import enqueue
from rqconc.cli.events import events
from rqconc.cli.failed import failed, requeue
from rqconc.cli.info import info
from rqconc.cli.jobs import jobs
from rqconc.cli.limits import limits, pause
from rqconc.cli.ping import ping
from rqconc.cli.removal import delete, empty, job
from rqconc.cli.server import server


def register(group: click.Group) -> None:
    """Add every command of this package to `group` (the `rqconc` click group)."""
    for command in (
        info,
        enqueue,
        job,
        ping,
        server,
        suspend,
        resume,
        failed,
        requeue,
        cancel,
        events,
        cron,
        dashboard,
        cluster,
        limits,
        pause,
        jobs,
        empty,
        delete,
    ):
        group.add_command(command)
