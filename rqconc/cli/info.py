"""`rqconc info [QUEUE ...] [-W] [-F] [--by-queue] [--json] [-i S]`: queue counts (and whether
a queue is paused, its limits) and, with -W, the live workers (with their totals), with -F
each queue's functions (SPEC 17); `-i` repeats it every S seconds until Ctrl+C (SPEC
sections 7 and 14)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import click
import redis

from rqconc.cli.common import (
    client_for,
    namespace_option,
    never_used,
    table,
    unix_to_iso,
    url_option,
    warn,
)
from rqconc.connection.clients import translated_errors
from rqconc.metrics.read import queue_functions
from rqconc.queue.control import is_suspended
from rqconc.queue.counts import COUNTS, queue_counts
from rqconc.queue.events import EventStream
from rqconc.queue.limits.settings import Limits
from rqconc.store.keys import KeySpace, check_queue_name
from rqconc.worker.listened import EVERY
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
    "totals",  # since it started: finished, failed, busy_seconds (SPEC 17)
)
# The columns of the table: the fields up to `state` and the queues as they are.
TABLE_FIELDS = WORKER_FIELDS[:-3]
# On a terminal, each tick redraws in place: cursor home, every line cleared to its end,
# then everything below cleared (no blank flash, as a full clear before drawing would give).
HOME, CLEAR_LINE, CLEAR_BELOW = "\x1b[H", "\x1b[K", "\x1b[J"


def serves(worker: Dict[str, Any], queue: str) -> bool:
    """Whether `worker` takes from `queue` (a `-q all` worker takes from every queue)."""
    return queue in worker["queues"] or EVERY in worker["queues"]


def gather(
    client: redis.Redis,
    with_workers: bool,
    names: Optional[Sequence[str]] = None,
    by_queue: bool = False,
    namespace: str = "rqconc",
    with_functions: bool = False,
) -> Dict[str, Any]:
    """The report: every known queue, or only `names` (and only the workers serving them);
    with_functions: each queue's functions (SPEC 17)."""
    shown = list(names) if names else None
    report: Dict[str, Any] = {"queues": queue_counts(client, shown, namespace)}
    with translated_errors(client):
        found = Limits.read_many(client, KeySpace(namespace), [q["name"] for q in report["queues"]])
    for row in report["queues"]:  # a paused queue must not look stuck: say so, and its caps
        row.update(found[row["name"]].report())
    if is_suspended(client, namespace=namespace):  # only then: the SPEC's shape stays
        report["suspended"] = True
    dropped = EventStream(client, namespace).dropped()  # only when some: the shape stays
    if dropped:
        report["events_dropped"] = dropped
    if with_functions:
        report["functions"] = {
            q["name"]: function_rows(client, q["name"], namespace) for q in report["queues"]
        }
    if with_workers or by_queue:
        with translated_errors(client):
            workers = [
                {f: w.get(f) for f in WORKER_FIELDS} for w in list_workers(client, namespace)
            ]
        if names:
            workers = [w for w in workers if any(serves(w, q) for q in names)]
        report["workers"] = workers
        if by_queue:
            report["by_queue"] = group(workers, [q["name"] for q in report["queues"]], names)
    return report


def function_rows(client: redis.Redis, queue: str, namespace: str) -> List[Dict[str, Any]]:
    """Finished, failed and run-time p50/p95 (s) of each function of `queue` the metrics name
    (at most 100, the rest as 'other'), since the namespace began."""
    return [
        {
            "func": f.name,
            "finished": f.finished,
            "failed": f.failed,
            "run_p50": f.run.quantile(0.5),
            "run_p95": f.run.quantile(0.95),
        }
        for f in queue_functions(client, queue, namespace)
    ]


def _functions_table(functions: Dict[str, List[Dict[str, Any]]]) -> str:
    rows = [
        [
            queue,
            f["func"],
            f["finished"],
            f["failed"],
            _seconds(f["run_p50"]),
            _seconds(f["run_p95"]),
        ]
        for queue, found in functions.items()
        for f in found
    ]
    if not rows:
        return "no function has run yet"
    return table(("queue", "function", "finished", "failed", "p50_s", "p95_s"), rows)


def _seconds(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def group(
    workers: List[Dict[str, Any]], known: List[str], names: Optional[Sequence[str]]
) -> Dict[str, List[str]]:
    """{queue: names of the workers serving it}, over the queues shown; without a filter,
    also the queues workers listen on that never received a job."""
    queues = list(known)
    if not names:
        named = {q for w in workers for q in w["queues"] if q != EVERY}
        queues = sorted(set(queues) | named)
    return {q: [w["name"] for w in workers if serves(w, q)] for q in queues}


def _workers_table(workers: List[Dict[str, Any]]) -> str:
    rows = [
        [w[f] for f in TABLE_FIELDS]
        + [len(w["current_jobs"]), w["totals"]["finished"], w["totals"]["failed"]]
        + [f"{w['totals']['busy_seconds']:.1f}", unix_to_iso(w["last_heartbeat"])]
        for w in workers
    ]
    totals = ("jobs", "finished", "failed", "busy_s", "last_heartbeat")
    return table(TABLE_FIELDS + totals, rows)


def settings_text(row: Dict[str, Any]) -> str:
    """A queue's pause and caps in a few words ("paused, concurrency 2, rate 10/s"), or "-"."""
    said = ["paused"] if row.get("paused") else []
    said += [f"{name.replace('_', ' ')} {value}" for name, value in row.get("limits", {}).items()]
    return ", ".join(said) or "-"


def _queues_table(queues: List[Dict[str, Any]]) -> str:
    """The counts of each queue; a column of settings once a queue has any, and how to
    resume when one is paused."""
    headers, rows = ("queue",) + COUNTS, [[q["name"]] + [q[c] for c in COUNTS] for q in queues]
    if not any("paused" in q or "limits" in q for q in queues):
        return table(headers, rows)
    shown = table(headers + ("settings",), [r + [settings_text(q)] for r, q in zip(rows, queues)])
    if any(q.get("paused") for q in queues):
        shown += "\n\npaused: no worker takes a paused queue's jobs until `rqconc resume QUEUE`"
    return shown


def render(report: Dict[str, Any]) -> str:
    queues = report["queues"]
    parts = [_queues_table(queues) if queues else "no queues"]
    if "by_queue" in report:
        parts += [
            _group_text(q, served, report["workers"]) for q, served in report["by_queue"].items()
        ]
    elif "workers" in report:
        parts.append(_workers_table(report["workers"]) if report["workers"] else "no workers")
    if "functions" in report:
        parts.append(_functions_table(report["functions"]))
    if report.get("events_dropped"):
        parts.append(
            f"the event stream dropped {report['events_dropped']} entries before a consumer "
            "group (a shipper) had them: `rqconc events --stats`"
        )
    if report.get("suspended"):
        parts.insert(0, "workers are suspended: they take no new job (`rqconc resume` ends it)")
    return "\n\n".join(parts)


def _group_text(queue: str, served: List[str], workers: List[Dict[str, Any]]) -> str:
    if not served:
        return f"{queue}: no workers"
    rows = _workers_table([w for w in workers if w["name"] in served])
    count = f"{len(served)} worker" + ("s" if len(served) > 1 else "")
    return f"{queue}: {count}\n" + "\n".join("  " + line for line in rows.splitlines())


def live(show: Callable[[], Dict[str, Any]], interval: float, as_json: bool) -> None:
    """Show the report every `interval` s until Ctrl+C (which ends it with exit 0): in place
    on a terminal, else one after another (one JSON object per line with --json)."""
    redraw = not as_json and sys.stdout.isatty()
    try:
        while True:
            started = time.monotonic()
            report = show()
            if as_json:
                click.echo(json.dumps(dict(report, time=round(time.time(), 3))))
            elif redraw:
                heading = f"every {interval:g} s, {time.strftime('%H:%M:%S')} (Ctrl+C ends)"
                lines = [heading, "", *render(report).splitlines()]
                click.echo(
                    HOME + "".join(line + CLEAR_LINE + "\n" for line in lines) + CLEAR_BELOW,
                    nl=False,
                )
            else:
                click.echo(f"-- {time.strftime('%Y-%m-%d %H:%M:%S')}\n{render(report)}\n")
            sys.stdout.flush()
            time.sleep(max(0.0, interval - (time.monotonic() - started)))
    except KeyboardInterrupt:
        pass


@click.command()
@click.argument("queues", nargs=-1)
@click.option("-W", "--workers", "with_workers", is_flag=True, help="Also list the workers.")
@click.option(
    "-F",
    "--functions",
    "with_functions",
    is_flag=True,
    help="Also list each queue's functions: finished, failed, run-time p50/p95.",
)
@click.option(
    "--by-queue", is_flag=True, help="Group the workers under the queues they serve (implies -W)."
)
@click.option(
    "-i",
    "--interval",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="S",
    help="Repeat every S seconds until Ctrl+C (in place on a terminal).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (per tick).")
@url_option
@namespace_option()
def info(
    queues: Sequence[str],
    with_workers: bool,
    with_functions: bool,
    by_queue: bool,
    interval: Optional[float],
    as_json: bool,
    url: Optional[str],
    namespace: str,
) -> None:
    """Queues (all, or only QUEUE ...) with their job counts and (with -W) the live workers."""
    for name in queues:
        try:
            check_queue_name(name)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    client = client_for(url)
    # A queue may be named before its first job (a worker listens on it): shown, with a
    # warning, since a typo would otherwise show as an idle queue.
    note = never_used(client, queues, namespace) if queues else None
    if note:
        warn(f"{note}; its counts are all 0")

    def show() -> Dict[str, Any]:
        return gather(client, with_workers, queues, by_queue, namespace, with_functions)

    if interval is not None:
        return live(show, interval, as_json)
    report = show()
    click.echo(json.dumps(report) if as_json else render(report))
