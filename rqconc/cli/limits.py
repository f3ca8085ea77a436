"""Limits from the command line (SPEC 11): `rqconc limits QUEUE`, `rqconc pause QUEUE`
(`rqconc resume QUEUE` lives beside `rqconc resume`, in control.py), and the limit options
of `rqconc enqueue`."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, TypeVar

import click

from rqconc.cli.common import (
    client_for,
    namespace_option,
    never_used,
    replica_options,
    url_option,
    warn,
)
from rqconc.connection.replicas import DEFAULT_WAIT_TIMEOUT
from rqconc.queue.queue import Queue

F = TypeVar("F", bound=Callable[..., Any])
LIMIT_CLI_OPTIONS = ("group", "ttl", "unique_key", "unique_for", "debounce")


def limit_enqueue_options(func: F) -> F:
    """`rqconc enqueue`'s --group, --ttl, --unique-key, --unique-for, --debounce."""
    seconds = click.FloatRange(min=0, min_open=True)
    for decorator in reversed(
        (
            click.option("--group", default=None, help="The job's group (for group limits)."),
            click.option(
                "--ttl",
                type=seconds,
                default=None,
                metavar="SECONDS",
                help="Cancel the job (event expired) if not started SECONDS after its due time.",
            ),
            click.option(
                "--unique-key",
                default=None,
                metavar="KEY",
                help="Return the job holding KEY instead of a new one while it waits or runs.",
            ),
            click.option(
                "--unique-for",
                type=seconds,
                default=None,
                metavar="SECONDS",
                help="Keep the unique key SECONDS after the job ended.",
            ),
            click.option(
                "--debounce",
                type=seconds,
                default=None,
                metavar="SECONDS",
                help="Replace a waiting job's arguments and start it SECONDS from now.",
            ),
        )
    ):
        func = decorator(func)
    return func


def take_limit_options(given: Dict[str, Any]) -> Dict[str, Any]:
    """The limit options given to `rqconc enqueue`, taken out of `given`."""
    taken = {name: given.pop(name, None) for name in LIMIT_CLI_OPTIONS}
    return {name: value for name, value in taken.items() if value is not None}


def _queue(
    name: str,
    namespace: str,
    url: Optional[str],
    wait_replicas: int = 0,
    wait_timeout: float = DEFAULT_WAIT_TIMEOUT,
) -> Queue:
    try:
        return Queue(
            name,
            connection=client_for(url),
            namespace=namespace,
            wait_replicas=wait_replicas,
            wait_timeout=wait_timeout,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.option("--concurrency", type=int, default=None, help="Most running jobs at once.")
@click.option("--rate", default=None, help="Most starts per second/minute/hour: 100/s, 5/min.")
@click.option("--group-concurrency", type=int, default=None, help="The same, per group.")
@click.option("--group-rate", default=None, help="The same, per group.")
@click.option("--clear", is_flag=True, help="Remove the queue's limits and group limits.")
@replica_options
@namespace_option()
@url_option
def limits(
    queue_name: str,
    concurrency: Optional[int],
    rate: Optional[str],
    group_concurrency: Optional[int],
    group_rate: Optional[str],
    clear: bool,
    wait_replicas: int,
    wait_timeout: float,
    namespace: str,
    url: Optional[str],
) -> None:
    """Show or set a queue's limits, enforced across all workers. The options given replace
    the queue's caps (or its groups' caps); --clear removes them all."""
    queue = _queue(queue_name, namespace, url, wait_replicas, wait_timeout)
    caps, group_caps = (concurrency, rate), (group_concurrency, group_rate)
    if clear and any(v is not None for v in caps + group_caps):
        raise click.UsageError("--clear removes every limit: give no other limit with it")
    try:
        if clear or any(v is not None for v in caps):
            queue.set_limits(*caps)
        if clear or any(v is not None for v in group_caps):
            queue.set_group_limits(*group_caps)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    shown = queue.limits
    click.echo(
        f"{queue_name}: {'paused' if shown.paused else 'running'}; "
        f"concurrency {shown.concurrency or '-'}, rate {shown.rate or '-'}; per group: "
        f"concurrency {shown.group_concurrency or '-'}, rate {shown.group_rate or '-'}"
    )


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@replica_options
@namespace_option()
@url_option
def pause(
    queue_name: str, wait_replicas: int, wait_timeout: float, namespace: str, url: Optional[str]
) -> None:
    """Stop every worker taking QUEUE's jobs (running ones finish; other queues go on)."""
    queue = _queue(queue_name, namespace, url, wait_replicas, wait_timeout)
    queue.pause()
    click.echo(f"queue {queue_name} paused")
    # Pausing a queue before its first job is fine; a typo should not pass unseen.
    note = never_used(queue.connection, [queue_name], namespace)
    if note:
        warn(f"{note}; paused anyway")


def resume_queue(
    queue_name: str, namespace: str, url: Optional[str], wait_replicas: int, wait_timeout: float
) -> None:
    """`rqconc resume QUEUE`: undo `rqconc pause QUEUE`. A queue that is not paused and never
    received a job is misuse (a typo: nothing is resumed); one that is not paused, a note."""
    queue = _queue(queue_name, namespace, url, wait_replicas, wait_timeout)
    if not queue.limits.paused:
        note = never_used(queue.connection, [queue_name], namespace)
        if note:
            raise click.UsageError(f"queue {queue_name!r} is not paused: {note}")
        click.echo(f"queue {queue_name} is not paused; nothing to resume")
        return
    queue.resume()
    click.echo(f"queue {queue_name} resumed")
