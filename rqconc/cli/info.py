"""`rqconc info [-W] [--json]`: queue counts and, with -W, the live workers."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

import click
import redis

from rqconc.cli.common import client_for, table, unix_to_iso, url_option
from rqconc.connection.clients import translated_errors
from rqconc.queue.control import is_suspended
from rqconc.queue.counts import COUNTS, queue_counts
from rqconc.worker.registry import list_workers

WORKER_FIELDS = (
    "name",
    "host",
    "pid",
    "backend",
    "size",
    "busy",
    "idle",
    "state",
    "queues",
    "current_jobs",
    "last_heartbeat",
)


def gather(client: redis.Redis, with_workers: bool) -> Dict[str, Any]:
    report: Dict[str, Any] = {"queues": queue_counts(client)}
    if is_suspended(client):  # only then: the SPEC's shape stays as it is otherwise
        report["suspended"] = True
    if with_workers:
        with translated_errors(client):
            workers = list_workers(client)
        report["workers"] = [{f: w.get(f) for f in WORKER_FIELDS} for w in workers]
    return report


def render(report: Dict[str, Any]) -> str:
    queues = report["queues"]
    parts = [
        table(("queue",) + COUNTS, [[q["name"]] + [q[c] for c in COUNTS] for q in queues])
        if queues
        else "no queues"
    ]
    if "workers" in report:
        workers = report["workers"]
        rows = [
            [w[f] for f in WORKER_FIELDS[:-2]]
            + [len(w["current_jobs"]), unix_to_iso(w["last_heartbeat"])]
            for w in workers
        ]
        headers = WORKER_FIELDS[:-2] + ("jobs", "last_heartbeat")
        parts.append(table(headers, rows) if workers else "no workers")
    if report.get("suspended"):
        parts.insert(0, "workers are suspended: they take no new job (`rqconc resume` ends it)")
    return "\n\n".join(parts)


@click.command()
@click.option("-W", "--workers", "with_workers", is_flag=True, help="Also list the workers.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@url_option
def info(with_workers: bool, as_json: bool, url: Optional[str]) -> None:
    """Queues with their job counts and (with -W) the live workers."""
    report = gather(client_for(url), with_workers)
    click.echo(json.dumps(report) if as_json else render(report))
