"""`rqconc cron list [--json]`, `rqconc cron remove ID`, and `rqconc cron add EXPR ...` /
`rqconc cron every SECONDS ...`: the cron entries of the namespace.

Entries are registered from code (`q.cron(...)`, `q.every(...)`) or with `add` / `every`,
which call the same methods; ids are unique across queues, so `remove` takes just the id.
Removing an id that does not exist is an error (exit 1), like canceling a job that does not
exist.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any, Callable, Dict, List, Optional, Union
from zoneinfo import ZoneInfo

import click

from rqconc.cli.common import (
    client_for,
    namespace_option,
    replica_options,
    replica_options_list,
    table,
    unix_to_iso,
    url_option,
)
from rqconc.cli.enqueue import parse_json_args, parse_json_object
from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import ReplicaWait
from rqconc.queue.queue import Queue
from rqconc.queue.schedule.cron import CronEntry, entries, latest_tick, remove
from rqconc.queue.schedule.intervals import Tick
from rqconc.queue.schedule.zones import UTC
from rqconc.store.keys import KeySpace
from rqconc.worker.scheduler import leader

LIST_FIELDS = ("id", "expr", "func", "queue", "next_run", "last_tick")
SHOWN_RUNS = 3  # next fire times shown: enough to see what a six-field expression means


def next_runs(entry: CronEntry, now: float, count: int = SHOWN_RUNS) -> List[Tick]:
    """The next `count` ticks after `now` that fire (inside the entry's bounds): six-field
    expressions read seconds last (croniter), so `*/2 * * * * *` is every second of even
    minutes, which these show."""
    return entry.runs_after(now, count)


def last_enqueued(entry: CronEntry, now: float) -> Optional[Tick]:
    """The latest tick enqueued, never a future one: ticks planned ahead are not yet due,
    so the one shown is the latest tick up to now (if the entry existed then)."""
    if entry.last_tick is None or entry.last_tick <= now:
        return entry.last_tick
    tick = latest_tick(entry.expr, now, entry.tz)
    return tick if tick >= entry.registered_at else None


def tick_to_iso(tick: Tick, tz: str = UTC) -> str:
    """A tick in UTC, or in zone `tz` with its offset; with its milliseconds when it has
    some (a fractional interval's)."""
    if tz != UTC:
        return dt.datetime.fromtimestamp(tick, tz=ZoneInfo(tz)).isoformat()
    if isinstance(tick, int):
        return unix_to_iso(tick)
    stamp = dt.datetime.fromtimestamp(tick, tz=dt.timezone.utc)
    return stamp.isoformat(timespec="milliseconds")


def bounds_text(shown: Dict[str, Any]) -> str:
    """An entry's bounds as `cron list` shows them: "2/5 times, from ..., until ..."."""
    parts = []
    if shown["times"] is not None:
        parts.append(f"{shown['fired']}/{shown['times']} times")
    if shown["start"] is not None:
        parts.append("from " + tick_to_iso(shown["start"], shown["tz"]))
    if shown["end"] is not None:
        parts.append("until " + tick_to_iso(shown["end"], shown["tz"]))
    if shown["skip_if_running"]:
        parts.append("skip if running")
    return ", ".join(parts) or "-"


def moment(value: Optional[str]) -> Optional[Union[float, dt.datetime]]:
    """--start / --end: Unix seconds or an ISO 8601 datetime (without an offset: in --tz)."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r}: use Unix seconds or an ISO 8601 datetime") from None


def listed(entry: CronEntry, now: float) -> Dict[str, Any]:
    shown = entry.as_dict()
    shown["next_runs"] = next_runs(entry, now)
    shown["last_tick"] = last_enqueued(entry, now)
    return shown


@click.group()
def cron() -> None:
    """Cron entries (q.cron(...), q.every(...)): list, add, every, remove."""


def _register(schedule: str, register: Callable[..., CronEntry], given: Dict[str, Any]) -> None:
    """Register through the Queue method `register(queue, func, *args, id=, **kwargs)` (the
    same checks as in code) with the options `add` and `every` share, and say what it does."""
    queue = Queue(
        given["queue_name"],
        connection=client_for(given["url"]),
        namespace=given["namespace"],
        wait_replicas=given["wait_replicas"],
        wait_timeout=given["wait_timeout"],
    )
    args = parse_json_args(given["json_args"])
    named = parse_json_object(given["kwargs"], "--kwargs") or {}
    bounded = {
        "times": given["times"],
        "start": moment(given["start"]),
        "end": moment(given["end"]),
        "skip_if_running": given["skip_if_running"],
    }
    try:
        with translated_errors(queue.connection):
            entry = register(
                queue, given["function"], *args, id=given["cron_id"], **bounded, **named
            )
    except ValueError as exc:  # a bad expression, interval, id or function name: misuse
        raise click.UsageError(str(exc)) from None
    runs = ", ".join(tick_to_iso(run, entry.tz) for run in next_runs(entry, time.time()))
    click.echo(f"cron {entry.id}: {entry.func} {schedule} on queue {entry.queue}; next: {runs}")


def _entry_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """What `add` and `every` share after their schedule argument."""
    for option in (
        click.argument("json_args", nargs=-1, metavar="[JSON_ARG]..."),
        click.argument("function", metavar="module:function"),
        namespace_option(),
        url_option,
        *reversed(replica_options_list()),
        click.option(
            "--kwargs", default=None, metavar="JSON", help="A JSON object of keyword arguments."
        ),
        click.option(
            "--id",
            "cron_id",
            default=None,
            help="The entry's id (default: the function's name); registering it again replaces it.",
        ),
        click.option("-q", "--queue", "queue_name", required=True, help="The queue of its jobs."),
        click.option(
            "--times", type=click.IntRange(min=1), default=None, help="Fire at most N times."
        ),
        click.option("--start", default=None, help="Fire from (ISO datetime or Unix seconds)."),
        click.option("--end", default=None, help="Fire until (ISO datetime or Unix seconds)."),
        click.option(
            "--skip-if-running",
            is_flag=True,
            help="Skip a tick while the previous job still waits or runs.",
        ),
    ):
        command = option(command)
    return command


# A negative number is a JSON argument, not an unknown option (as in `rqconc enqueue`).
@cron.command(name="add", context_settings={"ignore_unknown_options": True})
@click.argument("expr", metavar="EXPR")
@click.option("--tz", default=None, help="The time zone EXPR is read in (zoneinfo; UTC).")
@_entry_options
def add_cron(expr: str, tz: Optional[str], **given: Any) -> None:
    """Run FUNCTION(JSON_ARG...) at every tick of EXPR (5 fields, or 6 with seconds last;
    in --tz, default UTC), exactly once per tick however many workers run: q.cron(...)."""
    at = f"at {expr!r}" + (f" in {tz}" if tz else "")
    _register(at, lambda q, *args, **kw: q.cron(expr, *args, tz=tz, **kw), given)


@cron.command(name="every", context_settings={"ignore_unknown_options": True})
@click.argument("seconds", type=float, metavar="SECONDS")
@_entry_options
def every_cron(seconds: float, **given: Any) -> None:
    """Run FUNCTION(JSON_ARG...) every SECONDS (from 0.1, any positive number: 0.5, 1.5,
    90...; ticks at its multiples since the epoch), exactly once per tick: q.every(...)."""
    _register(f"every {seconds:g} s", lambda q, *args, **kw: q.every(seconds, *args, **kw), given)


@cron.command(name="list")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One JSON array of {id, expr, func, queue, next_run, last_tick, description, "
    "tz, times, fired, start, end, skip_if_running, next_runs}; times as Unix seconds.",
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
            e["tz"],
            [tick_to_iso(run, e["tz"]) for run in e["next_runs"]],
            tick_to_iso(e["last_tick"], e["tz"]) if e["last_tick"] is not None else None,
            bounds_text(e),
        ]
        for e in shown
    ]
    heads = ["ID", "EXPR", "FUNCTION", "QUEUE", "ZONE", "NEXT RUNS", "LAST ENQUEUED", "BOUNDS"]
    click.echo(table(heads, rows))
    if lead is None:
        click.echo("scheduler: no leader (no worker is running)")
    else:
        host, pid, name = lead
        click.echo(f"scheduler: led by worker {name} (pid {pid} on {host})")


@cron.command(name="remove")
@click.argument("cron_id", metavar="ID")
@replica_options
@url_option
@namespace_option()
def remove_cron(
    cron_id: str, wait_replicas: int, wait_timeout: float, url: Optional[str], namespace: str
) -> None:
    """Remove a cron entry and its jobs enqueued ahead of their ticks that have not
    started. Exits 1 if there is no entry of that id."""
    client = client_for(url)
    wait = ReplicaWait(wait_replicas, wait_timeout)
    with translated_errors(client):
        removed = remove(client, KeySpace(namespace), cron_id, wait=wait)
    if not removed:
        raise click.ClickException(f"no cron entry {cron_id}")
    click.echo(f"removed cron {cron_id}")
