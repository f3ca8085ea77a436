"""What the commands share: the `--url` option, a client, aligned tables, time display."""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable, List, Optional, Sequence, TypeVar

import click
import redis

from rqconc.connection.clients import connect, resolve_url
from rqconc.connection.replicas import DEFAULT_WAIT_TIMEOUT
from rqconc.queue.counts import queue_names
from rqconc.store.keys import KeySpace, split_namespaces

F = TypeVar("F", bound=Callable[..., Any])


def url_option(func: F) -> F:
    """`--url`: explicit URL, else REDIS_URL, else the embedded server (SPEC section 6)."""
    return click.option(
        "--url",
        default=None,
        metavar="URL",
        help="Redis URL (default: $REDIS_URL, else the embedded server).",
    )(func)


def replica_options_list(option: Callable[..., Any] = click.option) -> List[Callable[[F], F]]:
    """`--wait-replicas N` / `--wait-timeout S` (SPEC section 8, docs/reliability.md)."""
    return [
        option(
            "--wait-replicas",
            type=click.IntRange(min=0),
            default=0,
            show_default=True,
            metavar="N",
            help="Each enqueue and state change returns only once N replicas acknowledged it "
            "(Redis WAIT): a failover then loses none of them.",
        ),
        option(
            "--wait-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=DEFAULT_WAIT_TIMEOUT,
            show_default=True,
            metavar="SECONDS",
            help="How long to wait for those replicas before failing with a connection error.",
        ),
    ]


def replica_options(func: F) -> F:
    for option in reversed(replica_options_list()):
        func = option(func)
    return func


NAMESPACE_ENV = "RQCONC_NAMESPACE"


def namespace_option(many: bool = False) -> Callable[[F], F]:
    """`--namespace` (and RQCONC_NAMESPACE) for every command: the namespace whose keys it
    reads and writes; with `many` (the worker) a comma list of namespaces to serve."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> str:
        if isinstance(value, (list, tuple)):  # a config file's list
            value = ",".join(str(v) for v in value)
        try:
            names = split_namespaces(value)
            for name in names:
                KeySpace(name)
        except (ValueError, TypeError) as exc:
            raise click.BadParameter(str(exc), ctx, param) from None
        if len(names) > 1 and not many:
            raise click.BadParameter(
                f"{value!r}: this command works on one namespace (a worker may serve several)",
                ctx,
                param,
            )
        return ",".join(names)

    return click.option(
        "--namespace",
        default="rqconc",
        show_default=True,
        envvar=NAMESPACE_ENV,
        show_envvar=True,
        callback=check,
        metavar="NAMES" if many else "NAME",
        help="Comma list of namespaces to serve (each one's queues in turn)."
        if many
        else "The namespace (key prefix and hash tag) to work on.",
    )


def client_for(url: Optional[str]) -> redis.Redis:
    """A client for `--url`; a malformed URL is misuse (exit 2). Sends nothing yet."""
    try:
        return connect(resolve_url(url))
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from None


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Plain-text columns, left-aligned, two spaces apart; numbers right-aligned."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [
        all(isinstance(row[i], (int, float)) for row in rows) and bool(rows)
        for i in range(len(headers))
    ]
    lines = []
    for row in cells:
        parts = [
            cell.rjust(w) if num else cell.ljust(w) for cell, w, num in zip(row, widths, numeric)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def when(value: Optional[dt.datetime]) -> Optional[str]:
    """An aware datetime as ISO 8601 UTC with milliseconds, or None."""
    return value.isoformat(timespec="milliseconds") if value else None


def unix_to_iso(seconds: float) -> str:
    stamp = dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc)
    return stamp.isoformat(timespec="seconds")


def one_line(text: str) -> str:
    """Collapse whitespace so a message stays on one line."""
    return " ".join(str(text).split())


def plural(n: int, word: str) -> str:
    """ "1 job", "2 jobs": counts in the commands' one-line answers."""
    return f"{n} {word}{'' if n == 1 else 's'}"


__all__: List[str] = [
    "plural",
    "url_option",
    "namespace_option",
    "client_for",
    "table",
    "when",
    "unix_to_iso",
    "one_line",
]


def never_used(client: redis.Redis, names: Sequence[str], namespace: str) -> Optional[str]:
    """What to say when some of `names` never received a job in the namespace (a typo, or a
    queue whose first job is still to come), naming the queues that did; None if all did."""
    known = queue_names(client, namespace)
    unknown = [name for name in names if name not in known]
    if not unknown:
        return None
    listed = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "") if known else "none"
    return (
        f"no job ever entered queue {', '.join(repr(n) for n in unknown)} of namespace "
        f"{namespace} (its queues: {listed})"
    )


def warn(text: str) -> None:
    """One line on stderr that does not fail the command."""
    click.echo(f"rqconc: warning: {text}", err=True)
