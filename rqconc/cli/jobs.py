"""`rqconc jobs QUEUE [--status S] [--func F] [--limit N] [--offset N] [--json]`: one page of
a queue's jobs of one status (SPEC 17), read as the dashboard's queue page reads them
(queue/listing.py: O(page), a function filter searching a bounded window)."""

from __future__ import annotations

import json
from typing import Optional

import click

from rqconc.cli.common import client_for, namespace_option, one_line, table, url_option
from rqconc.queue.listing import MAX_LIMIT, PAGE, STATUSES, JobListing, list_jobs
from rqconc.store.keys import check_queue_name


def _as_json(listing: JobListing) -> str:
    rows = [
        {
            "id": job.id,
            "function": job.func_name,
            "status": job.field("status"),
            "attempts": int(job.field("attempts") or 0),
            "error": _error(job.field("exc_type"), job.field("exc_message")),
        }
        for job in listing.jobs
    ]
    return json.dumps(
        {
            "queue": listing.queue,
            "status": listing.status,
            "func": listing.func,
            "offset": listing.offset,
            "total": listing.total,
            "scanned": listing.scanned,
            "next_offset": listing.next_offset,
            "jobs": rows,
        }
    )


def _error(kind: Optional[str], message: Optional[str]) -> Optional[str]:
    return one_line(f"{kind}: {message or ''}") if kind else None


def _footer(listing: JobListing) -> str:
    shown = f"{len(listing.jobs)} of {listing.total} {listing.status}"
    if listing.func is not None:
        last = listing.offset + listing.scanned
        shown += (
            f" (function containing {listing.func!r}: searched {listing.offset + 1}-{last}, "
            "a bounded window per page)"
        )
    if listing.next_offset is not None:
        shown += f"; next page: --offset {listing.next_offset}"
    return shown


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.option(
    "--status",
    type=click.Choice(STATUSES),
    default="queued",
    show_default=True,
    help="Which jobs: queued in run order, the others newest first.",
)
@click.option(
    "--func", default=None, metavar="NAME", help="Only jobs whose function contains NAME."
)
@click.option(
    "--limit",
    type=click.IntRange(1, MAX_LIMIT),
    default=PAGE,
    show_default=True,
    help="Jobs per page.",
)
@click.option("--offset", type=click.IntRange(min=0), default=0, help="Where the page starts.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@url_option
@namespace_option()
def jobs(
    queue_name: str,
    status: str,
    func: Optional[str],
    limit: int,
    offset: int,
    as_json: bool,
    url: Optional[str],
    namespace: str,
) -> None:
    """List one page of QUEUE's jobs of one status: id, function, attempts, error."""
    try:
        check_queue_name(queue_name)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    listing = list_jobs(client_for(url), queue_name, status, offset, limit, func, namespace)
    if as_json:
        click.echo(_as_json(listing))
        return
    rows = [
        [
            job.id,
            job.func_name,
            job.field("status"),
            int(job.field("attempts") or 0),
            _error(job.field("exc_type"), job.field("exc_message")),
        ]
        for job in listing.jobs
    ]
    if rows:
        click.echo(table(["ID", "FUNCTION", "STATUS", "ATTEMPTS", "ERROR"], rows))
    click.echo(_footer(listing))
