"""`rqconc server status|stop`: the embedded Redis under RQCONC_HOME (SPEC section 6)."""

from __future__ import annotations

import json
from typing import List, Optional

import click

from rqconc.cli.common import namespace_option, url_option
from rqconc.connection import embedded
from rqconc.connection.clients import connect
from rqconc.worker.registry import list_workers

_URL_NOTE = " (--url is accepted for uniformity; this is always the embedded server)"


@click.group()
def server() -> None:
    """Manage the embedded Redis server."""


@server.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@url_option
@namespace_option()
def status(as_json: bool, url: Optional[str], namespace: str) -> None:
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


status.help = (status.help or "") + _URL_NOTE + "; so is --namespace"


def _workers_on_embedded(namespace: str) -> List[str]:
    """Names of the workers registered on the running embedded server (none if it is down)."""
    if not embedded.status()["running"]:
        return []
    client = connect(embedded.url())
    try:
        return [worker["name"] for worker in list_workers(client, namespace)]
    finally:
        client.close()


@server.command()
@click.option("--force", is_flag=True, help="Stop it even while workers use it.")
@url_option
@namespace_option()
def stop(force: bool, url: Optional[str], namespace: str) -> None:
    """Shut the embedded server down (its data is kept)."""
    workers = [] if force else _workers_on_embedded(namespace)
    if workers:
        shown = ", ".join(workers[:3]) + (
            f" and {len(workers) - 3} more" if len(workers) > 3 else ""
        )
        raise click.ClickException(
            f"{len(workers)} worker(s) use the embedded server ({shown}); they would wait for it "
            "and stop taking jobs: stop them first, or pass --force"
        )
    if embedded.stop():
        click.echo("stopped the embedded Redis server")
    else:
        click.echo("no embedded Redis server was running")


stop.help = (stop.help or "") + _URL_NOTE + "; --namespace: whose workers are checked"
