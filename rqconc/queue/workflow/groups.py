"""Groups and chords (SPEC section 12): `rqconc.group(calls...)` enqueues jobs together and
returns a `Group`; `.then(func, *args)` makes it a chord, whose callback
`func(results, *args)` runs once every job of the group has finished.

The whole group (and a chord's callback, stored `deferred`) is one Lua step
(lua/enqueue_group.lua); the step that finishes its last job enqueues the callback with the
results in group order (lua/complete.lua); a job of the group failing for good cancels the
callback (lua/include/groups.lua). docs/architecture.md, "Groups", tells the whole story.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

from rqconc.aio.queue import AsyncQueue
from rqconc.queue.eager.group import EagerGroup
from rqconc.queue.queue import Queue
from rqconc.queue.workflow.group_result import Group
from rqconc.queue.workflow.signature import Func, Signature, signature_of


class GroupSpec:
    """A group not yet enqueued: its calls, and a chord's callback once `.then()` gave one."""

    def __init__(self, calls: Tuple[Signature, ...], chord: Optional[Signature] = None) -> None:
        self.signatures = calls
        self.chord = chord

    def __repr__(self) -> str:
        then = f", then {self.chord.func!r}" if self.chord else ""
        return f"GroupSpec({len(self.signatures)} calls{then})"

    def then(self, func: Func, *args: Any, **kwargs: Any) -> GroupSpec:
        """A chord: `func(results, *args, **kwargs)` runs once every job of the group has
        finished, `results` their return values in group order. Enqueue options among the
        kwargs (priority, timeout, ...) apply to the callback job."""
        return GroupSpec(self.signatures, Signature(func, args, kwargs))

    def enqueue(self, queue: Union[Queue, str]) -> Union[Group, EagerGroup]:
        """Store the group (and its chord callback) on `queue` (a Queue or a queue name) in
        one atomic step (an eager queue runs it inline and returns an EagerGroup, which has
        Group's interface)."""
        if isinstance(queue, str):
            queue = Queue(queue)
        return queue.enqueue_group(self.signatures, self.chord)

    async def aenqueue(self, queue: Union[AsyncQueue, str]) -> Any:
        """`enqueue` for async code (rqconc.aio): an AsyncGroup."""
        if isinstance(queue, str):
            queue = AsyncQueue(queue)
        return await queue.enqueue_group(self.signatures, self.chord)


def group(*calls: Any) -> GroupSpec:
    """Jobs to enqueue together: each a signature (`task.s(...)`) or a `(func, args[,
    kwargs])` tuple."""
    if not calls:
        raise ValueError("a group needs at least one job")
    return GroupSpec(tuple(signature_of(call) for call in calls))


__all__ = ["Group", "GroupSpec", "group"]
