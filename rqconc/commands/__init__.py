"""The `rqconc` inspection and management commands: info, enqueue, job, ping, server,
suspend, resume, failed, requeue, cancel, events, cron."""
from __future__ import annotations

import click

from rqconc.commands.cancel import cancel
from rqconc.commands.control import resume, suspend
from rqconc.commands.cron import cron
from rqconc.commands.enqueue import enqueue
from rqconc.commands.events import events
from rqconc.commands.failed import failed, requeue
from rqconc.commands.info import info
from rqconc.commands.job import job
from rqconc.commands.ping import ping
from rqconc.commands.server import server


def register(group: click.Group) -> None:
    """Add every command of this package to `group` (the `rqconc` click group)."""
    for command in (info, enqueue, job, ping, server, suspend, resume, failed,
                    requeue, cancel, events, cron):
        group.add_command(command)
