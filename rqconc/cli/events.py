"""`rqconc events [--follow] [--json] [-n N]`: the job transitions in the event stream."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

import click

from rqconc.cli.common import client_for, namespace_option, unix_to_iso, url_option
from rqconc.queue.events import EventStream

_COMMON = ("id", "event", "job_id", "queue", "ts", "worker")


def render(event: Dict[str, Any]) -> str:
    """One aligned line: time, event, job, queue, worker, then any other fields."""
    extra = " ".join(f"{k}={v}" for k, v in event.items() if k not in _COMMON)
    stamp = unix_to_iso(event["ts"] / 1000) if event.get("ts") else "-"
    line = (
        f"{stamp}  {event.get('event', '-'):<11} {event.get('job_id', '-')}  "
        f"{event.get('queue') or '-'}  {event.get('worker') or '-'}"
    )
    return f"{line}  {extra}".rstrip()


def render_stats(stats: Dict[str, Any]) -> str:
    """The stream's size and oldest entry, the dropped count, then a line per group."""
    oldest = unix_to_iso(stats["oldest"] / 1000) if stats["oldest"] is not None else "-"
    lines = [
        f"entries: {stats['entries']}  oldest: {oldest}",
        f"dropped before a consumer group had them: {stats['dropped']}",
    ]
    for group in stats["groups"]:
        lines.append(
            f"group {group['name']}: {group['consumers']} consumers, {group['pending']} "
            f"pending, last delivered {group['last_delivered_id']}"
        )
    return "\n".join(lines)


def _show(event: Dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(event))
    else:
        click.echo(render(event))


@click.command()
@click.option("-f", "--follow", is_flag=True, help="Keep printing new events (Ctrl+C ends).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.option(
    "-n",
    "--lines",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="How many of the latest events to print first.",
)
@click.option("--job", "job_id", default=None, help="Only the events of this job.")
@click.option(
    "--stats",
    is_flag=True,
    help="The stream's size, its oldest entry, its consumer groups (shippers) and the entries "
    "dropped before a group had them.",
)
@url_option
@namespace_option()
def events(
    follow: bool,
    as_json: bool,
    lines: int,
    job_id: Optional[str],
    stats: bool,
    url: Optional[str],
    namespace: str,
) -> None:
    """Print the latest job transitions, and with --follow the new ones as they happen."""
    stream = EventStream(client_for(url), namespace)
    if stats:
        shown = stream.stats()
        click.echo(json.dumps(shown) if as_json else render_stats(shown))
        return
    latest = stream.for_job(job_id) if job_id else stream.latest(lines) if lines else []
    for event in latest:
        _show(event, as_json)
    if not follow:
        return
    since = latest[-1]["id"] if latest else "$"
    try:
        for event in stream.follow(since=since):
            if job_id is None or event.get("job_id") == job_id:
                _show(event, as_json)
    except KeyboardInterrupt:
        pass
