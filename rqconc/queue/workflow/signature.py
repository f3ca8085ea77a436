"""A call not yet enqueued: what `@task`'s `.s(...)` returns and what `rqconc.group(...)`
takes (a `Signature`, or a `(func, args[, kwargs])` tuple)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple, Union

Func = Union[str, Callable[..., Any]]


@dataclass(frozen=True)
class Signature:
    """`func(*args, **kwargs)` to be enqueued with `options` (priority, timeout, retry, ...:
    the keyword options of `Queue.enqueue`)."""

    func: Func
    args: Tuple[Any, ...] = ()
    kwargs: Dict[str, Any] = field(default_factory=dict)
    options: Dict[str, Any] = field(default_factory=dict)
    # The namespace of the task that made it (`task.s(...)`); None: whichever queue's.
    namespace: Optional[str] = None


def signature_of(call: Any) -> Signature:
    """`call` as a Signature: a Signature as is, or a `(func, args)` / `(func, args, kwargs)`
    tuple; anything else is a ValueError naming it."""
    if isinstance(call, Signature):
        return call
    if isinstance(call, (tuple, list)) and len(call) in (2, 3):
        kwargs = call[2] if len(call) == 3 else {}
        return Signature(call[0], tuple(call[1]), dict(kwargs or {}))
    raise ValueError(
        f"expected a signature (task.s(...)) or a (func, args[, kwargs]) tuple, not {call!r}"
    )
