"""Nothing atomic spans two namespaces.

A namespace is the unit of placement: its keys share one hash tag, so on Redis Cluster it
is one slot on one master, and the steps that link jobs (a dependency released, a flow's
next stage, a callback, a group's chord) run inside one namespace's keys. A link to a job,
queue or task of another namespace could never be honoured atomically, so it is refused
when the job is enqueued, with nothing written.

What tells a namespace: a `Job` (`.namespace`), a `Queue` (`.keys.namespace`), a `Task`
(`.namespace`) and a `Signature` made by `task.s(...)` (`.namespace`). Job ids, function
names and plain functions carry none: they are taken to be the queue's own.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Set


def namespace_of(thing: Any) -> Optional[str]:
    """The namespace `thing` belongs to, or None when it does not say."""
    keys = getattr(thing, "keys", None)
    found = getattr(keys, "namespace", None) if keys is not None else None
    if found is None:
        found = getattr(thing, "namespace", None)
    return found if isinstance(found, str) else None


def namespaces_of(things: Iterable[Any]) -> Set[str]:
    return {found for found in map(namespace_of, things) if found is not None}


def refuse_foreign(namespace: str, what: str, others: Iterable[str]) -> None:
    """ValueError if any of `others` (namespaces) is not `namespace`."""
    foreign = sorted(set(others) - {namespace})
    if foreign:
        raise ValueError(
            f"{what} belongs to namespace {foreign[0]!r}, but the job is enqueued in namespace "
            f"{namespace!r}: nothing atomic spans two namespaces (each may live on another "
            "Redis Cluster master), so nothing was enqueued"
        )


def _dependency_namespaces(depends_on: Any) -> Set[str]:
    given = getattr(depends_on, "namespaces", None)  # a Dependency keeps its jobs' own
    if given is not None:
        return set(given)
    items = depends_on if isinstance(depends_on, (list, tuple, set)) else [depends_on]
    return namespaces_of(items)


def check_options(namespace: str, options: Dict[str, Any]) -> None:
    """The enqueue options of a job of `namespace`: parents and callbacks must be its own."""
    if options.get("depends_on") is not None:
        found = _dependency_namespaces(options["depends_on"])
        refuse_foreign(namespace, "depends_on: a parent job", found)
    for name in ("on_success", "on_failure"):
        if options.get(name) is not None:
            refuse_foreign(namespace, f"{name}: the callback", namespaces_of([options[name]]))


def check_call(namespace: str, what: str, call: Any) -> None:
    """A call to enqueue in `namespace` (a Signature, or a (func, args[, kwargs]) tuple):
    neither it nor its function may be bound to another namespace."""
    func = call[0] if isinstance(call, (tuple, list)) and call else getattr(call, "func", None)
    refuse_foreign(namespace, what, namespaces_of([call, func]))
    options = getattr(call, "options", None)
    if isinstance(options, dict):
        check_options(namespace, options)
