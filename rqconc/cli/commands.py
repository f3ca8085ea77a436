"""Where each `rqconc` command lives. The group imports a command's module only when that
command runs (or `--help` lists them all): `rqconc info` need not import the worker, the
engine and the web app to print a table, and each command starts in about half the time."""

from __future__ import annotations

import importlib
from typing import Dict, List, Optional

import click

# name -> "module:attribute"
COMMANDS: Dict[str, str] = {
    "worker": "rqconc.cli.worker_command:worker",
    "info": "rqconc.cli.info:info",
    "enqueue": "rqconc.cli.enqueue:enqueue",
    "job": "rqconc.cli.removal:job",
    "jobs": "rqconc.cli.jobs:jobs",
    "empty": "rqconc.cli.removal:empty",
    "delete": "rqconc.cli.removal:delete",
    "ping": "rqconc.cli.ping:ping",
    "server": "rqconc.cli.server:server",
    "suspend": "rqconc.cli.control:suspend",
    "resume": "rqconc.cli.control:resume",
    "failed": "rqconc.cli.failed:failed",
    "requeue": "rqconc.cli.failed:requeue",
    "cancel": "rqconc.cli.cancel:cancel",
    "events": "rqconc.cli.events:events",
    "cron": "rqconc.cli.cron:cron",
    "dashboard": "rqconc.cli.dashboard:dashboard",
    "cluster": "rqconc.cli.cluster:cluster",
    "limits": "rqconc.cli.limits:limits",
    "pause": "rqconc.cli.limits:pause",
    "metrics": "rqconc.cli.metrics:metrics",
}


def load(name: str) -> click.Command:
    module, attribute = COMMANDS[name].split(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


class CommandTable(click.Group):
    """The `rqconc` group: commands of COMMANDS, each imported on first use."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            self.add_command(load(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)
