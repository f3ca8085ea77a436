"""`rqconc cron list [--json]` and `rqconc cron remove ID`: the cron entries of the namespace.

Entries are registered from code (`q.cron(...)`); ids are unique across queues, so `remove`
takes just the id. Removing an id that does not exist is an error (exit 1), like canceling
a job that does not exist.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any, Dict, List, Optional

import click

from rqconc.cli.common import client_for, namespace_option, table, unix_to_iso, url_option
from rqconc.connection.clients import translated_errors
from rqconc.queue.cron import CronEntry, entries, latest_tick, next_tick, remove
from rqconc.queue.intervals import Tick
from rqconc.queue.keys import KeySpace
from rqconc.worker.scheduler import leader

LIST_FIELDS = ("id", "expr", "func", "queue", "next_run", "last_tick")
SHOWN_RUNS = 3  # next fire times shown: enough to see what a six-field expression means


def next_runs(entry: CronEntry, now: float, count: int = SHOWN_RUNS) -> List[Tick]:
    """The next `count` ticks after `now`: six-field expressions read seconds last
    (croniter), so `*/2 * * * * *` is every second of even minutes, which these show."""
    runs: List[Tick] = []
    after = now
    for _ in range(count):
        after = next_tick(entry.expr, after)
        runs.append(after)
    return runs


def last_enqueued(entry: CronEntry, now: float) -> Optional[Tick]:
    """The latest tick enqueued, never a future one: ticks planned ahead are not yet due,
    so the one shown is the latest tick up to now (if the entry existed then)."""
    if entry.last_tick is None or entry.last_tick <= now:
        return entry.last_tick
    tick = latest_tick(entry.expr, now)
    return tick if tick >= entry.registered_at else None


def tick_to_iso(tick: Tick) -> str:
    """A tick in UTC; with its milliseconds when it has some (a fractional interval's)."""
    if isinstance(tick, int):
        return unix_to_iso(tick)
    stamp = dt.datetime.fromtimestamp(tick, tz=dt.timezone.utc)
    return stamp.isoformat(timespec="milliseconds")


def listed(entry: CronEntry, now: float) -> Dict[str, Any]:
    shown = entry.as_dict()
    shown["next_runs"] = next_runs(entry, now)
    shown["last_tick"] = last_enqueued(entry, now)
    return shown


@click.group()
def cron() -> None:
    """Cron entries (registered with q.cron(...)): list, remove."""


@cron.command(name="list")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON array of {id, expr, func, queue, next_run, last_tick, "
    "description, next_runs}; times as Unix seconds.",
)
@url_option
@namespace_option()
def list_crons(as_json: bool, url: Optional[str], namespace: str) -> None:
    """List cron entries with their next run, and the worker that leads the scheduler."""
    client = client_for(url)
    keys = KeySpace(namespace)
    with translated_errors(client):
        found = entries(client, keys)
        lead = leader(client, keys)
    now = time.time()
    shown = [listed(entry, now) for entry in found]
    if as_json:
        click.echo(json.dumps(shown))
        return
    if not found:
        click.echo("no cron entries")
        return
    rows = [
        [
            e["id"],
            e["expr"],
            e["func"],
            e["queue"],
            [tick_to_iso(run) for run in e["next_runs"]],
            tick_to_iso(e["last_tick"]) if e["last_tick"] is not None else None,
        ]
        for e in shown
    ]
    click.echo(table(["ID", "EXPR", "FUNCTION", "QUEUE", "NEXT RUNS", "LAST ENQUEUED"], rows))
    if lead is None:
        click.echo("scheduler: no leader (no worker is running)")
    else:
        host, pid, name = lead
        click.echo(f"scheduler: led by worker {name} (pid {pid} on {host})")


@cron.command(name="remove")
@click.argument("cron_id", metavar="ID")
@url_option
@namespace_option()
def remove_cron(cron_id: str, url: Optional[str], namespace: str) -> None:
    """Remove a cron entry and its jobs enqueued ahead of their ticks that have not
    started. Exits 1 if there is no entry of that id."""
    client = client_for(url)
    with translated_errors(client):
        removed = remove(client, KeySpace(namespace), cron_id)
    if not removed:
        raise click.ClickException(f"no cron entry {cron_id}")
    click.echo(f"removed cron {cron_id}")
