"""`rqconc info [-W] [--json]`: queue counts and, with -W, the live workers."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import click
import redis

from rqconc.cli.common import client_for, table, unix_to_iso, url_option
from rqconc.connection.clients import translated_errors
from rqconc.queue.keys import KeySpace
from rqconc.queue.steps import now_ms, text
from rqconc.worker.registry import list_workers

COUNTS = ("queued", "started", "scheduled", "deferred", "failed", "finished")
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
_SIZE_COMMANDS = {"zset": "zcard", "set": "scard", "list": "llen", "hash": "hlen"}


def _count_keys(keys: KeySpace, name: str) -> Dict[str, Optional[str]]:
    """Each count's key for queue `name`."""
    return {
        "queued": keys.queue(name),
        "started": keys.started(name),
        "scheduled": keys.scheduled(name),
        "deferred": keys.deferred(name),
        "failed": keys.failed(name),
        "finished": keys.finished(name),
    }


def queue_counts(client: redis.Redis, names: List[str], keys: KeySpace) -> List[Dict[str, Any]]:
    """[{"name", "queued", ...}] in two round trips: key types, then their sizes. Finished
    jobs and dead letters whose TTL ran out stay in their sets until a maintenance pass
    trims them (lua/trim_ended.lua): they are not counted."""
    wanted = [
        (name, count, key)
        for name in names
        for count, key in _count_keys(keys, name).items()
        if key
    ]
    pipe = client.pipeline(transaction=False)
    for _, _, key in wanted:
        pipe.type(key)
    types = [text(t) for t in pipe.execute()]
    now = now_ms()
    pipe = client.pipeline(transaction=False)
    sized = []  # (queue, count, +1 or -1) per reply
    for (name, count, key), kind in zip(wanted, types):
        if count == "finished" and kind == "zset":  # scored by expiry
            pipe.zcount(key, f"({now}", "+inf")
        elif kind in _SIZE_COMMANDS:
            getattr(pipe, _SIZE_COMMANDS[kind])(key)
        else:
            continue
        sized.append((name, count, 1))
        if count == "failed" and kind == "zset":
            pipe.zcount(keys.failed_expiry(name), "-inf", now)
            sized.append((name, count, -1))
    rows: Dict[str, Dict[str, Any]] = {
        n: dict({"name": n}, **dict.fromkeys(COUNTS, 0)) for n in names
    }
    for (name, count, sign), size in zip(sized, pipe.execute(raise_on_error=False)):
        if not isinstance(size, Exception):  # a key of another type than ours: not counted
            rows[name][count] = max(0, rows[name][count] + sign * int(size))
    return [rows[n] for n in names]


def gather(client: redis.Redis, with_workers: bool) -> Dict[str, Any]:
    keys = KeySpace()
    with translated_errors(client):
        names = sorted(text(n) for n in client.smembers(keys.queues))
        report: Dict[str, Any] = {"queues": queue_counts(client, names, keys)}
        if with_workers:
            report["workers"] = [
                {f: w.get(f) for f in WORKER_FIELDS} for w in list_workers(client, keys.namespace)
            ]
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
    return "\n\n".join(parts)


@click.command()
@click.option("-W", "--workers", "with_workers", is_flag=True, help="Also list the workers.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@url_option
def info(with_workers: bool, as_json: bool, url: Optional[str]) -> None:
    """Queues with their job counts and (with -W) the live workers."""
    report = gather(client_for(url), with_workers)
    click.echo(json.dumps(report) if as_json else render(report))
