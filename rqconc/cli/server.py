"""`rqconc server status|stop`: the embedded Redis under RQCONC_HOME (SPEC section 6)."""

from __future__ import annotations

import json
from typing import Optional

import click

from rqconc.cli.common import url_option
from rqconc.connection import embedded

_URL_NOTE = " (--url is accepted for uniformity; this is always the embedded server)"


@click.group()
def server() -> None:
    """Manage the embedded Redis server."""


@server.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@url_option
def status(as_json: bool, url: Optional[str]) -> None:
    """Whether the embedded server runs, its pid, socket, version and memory."""
    state = embedded.status()
    if as_json:
        click.echo(json.dumps(state))
        return
    shown = {
        "running": "yes" if state["running"] else "no",
        "pid": state["pid"],
        "socket": state["socket"],
        "version": state["version"],
        "memory": state["used_memory_human"],
        "dir": state["dir"],
        "log": state["log"],
        "binary": state["binary"],
    }
    for name, value in shown.items():
        click.echo(f"{name:<8} {'-' if value is None else value}")


status.help = (status.help or "") + _URL_NOTE


@server.command()
@url_option
def stop(url: Optional[str]) -> None:
    """Shut the embedded server down (its data is kept)."""
    if embedded.stop():
        click.echo("stopped the embedded Redis server")
    else:
        click.echo("no embedded Redis server was running")


stop.help = (stop.help or "") + _URL_NOTE
