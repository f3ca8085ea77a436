"""What must hold before a worker starts, checked on its command line: each a one-line
usage error (exit 2) or, for settings Redis refuses, one line and exit 1 (SPEC 4)."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence, Tuple, Type

import click

from rqconc.connection.backoff import REDIS_DOWN
from rqconc.connection.clients import check_settings, connect
from rqconc.engine.backends import backend_name, backend_names, pool_class
from rqconc.engine.pool import Pool
from rqconc.engine.supervisor import check_slots
from rqconc.store.keys import check_queue_name
from rqconc.worker.listened import EVERY


def check_before_start(backend: str, options: Dict[str, Any]) -> None:
    """What must hold before a worker starts: Redis answers (or its outage is waited out),
    --slots fits the backend, --demo has one namespace and one worker; each a one-line error
    otherwise."""
    if options["source_kind"] == "redis":
        check_redis(options["url"])
    check_slots_option(backend, options["slots"])
    if options["demo"] and "," in options["namespace"]:
        raise click.UsageError("--demo runs in one namespace: give --namespace one name")
    if options["demo"] and options["processes"] > 1:
        raise click.UsageError("--demo runs one worker: drop --processes")


def check_redis(url: Optional[str]) -> None:
    """Before any child starts: a malformed URL or TLS option is misuse (exit 2); settings
    Redis refuses (credentials, DB index) end the worker with one line (exit 1, raised as
    ConfigurationError). An unreachable Redis is not checked here: the worker waits for it."""
    try:
        client = connect(url)
    except (ValueError, TypeError) as exc:
        raise click.UsageError(str(exc)) from None
    except REDIS_DOWN:  # a cluster client reads the slot map at once: no seed answered
        return
    try:
        check_settings(client)
    finally:
        client.close()


# The largest size each kind of child is run at. Beyond it a worker would exhaust the host
# before doing more work: processes cost ~30 MB and a CPU share each (4 per CPU, at least 256
# so a small host may still run I/O-bound processes); OS threads 8 MB of stack address space
# and GIL contention; greenlets are cheap, but one hub's scheduling degrades past ~10,000.
MAX_PROCESSES = max(256, 4 * (os.cpu_count() or 1))
MAX_THREADS = 1_000
MAX_GREENLETS = 10_000


def max_size(pool: Type[Pool]) -> Tuple[int, str]:
    """The largest size of a backend's pool, and what its children are."""
    if pool.children_are_processes:
        return MAX_PROCESSES, "processes (4 per CPU, at least 256)"
    if pool.is_green:
        return MAX_GREENLETS, "greenlets"
    return MAX_THREADS, "threads"


class BackendName(click.Choice):
    """The backend names, offered by shell completion and shown in --help; a name is
    checked by the engine's one resolver, whose ValueError is the one-line usage error."""

    def __init__(self) -> None:
        super().__init__(backend_names())

    def convert(self, value: Any, param: Optional[click.Parameter], ctx: Any) -> str:
        try:
            return backend_name(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def check_size(backend: str, size: int) -> None:
    if size < 1:
        raise click.UsageError(f"size must be at least 1, not {size}")
    bound, children = max_size(pool_class(backend))
    if size > bound:
        raise click.UsageError(
            f"size {size} is too large for {backend}: at most {bound} {children}; "
            "run several workers for more"
        )


def check_slots_option(backend: str, slots: int) -> None:
    """--slots K: a usage error unless K >= 1 on a process backend (SPEC 10)."""
    try:
        check_slots(slots, pool_class(backend))
    except ValueError as exc:
        raise click.UsageError(f"--slots: {exc}") from None


EVERY_QUEUE = {"all", EVERY}  # -q all, -q '*'


def split_queues(text: str) -> Sequence[str]:
    """The queue names of `-q`; `all` or `*` alone: every queue of the namespace (`*`)."""
    queues = [q.strip() for q in text.split(",") if q.strip()]
    if not queues:
        raise click.UsageError("--queues needs at least one queue name")
    if set(queues) & EVERY_QUEUE:
        if len(queues) > 1:
            raise click.UsageError("-q all (or '*') listens on every queue: name no other")
        return [EVERY]
    for queue in queues:
        try:
            check_queue_name(queue)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    return queues
