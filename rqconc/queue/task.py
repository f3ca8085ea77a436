"""`@rqconc.task`: a module-level function that knows its queue and its enqueue options
(SPEC section 12).

    @task("sms", priority=Priority.HIGH, timeout=30)
    def send_sms(number: str, text: str) -> str: ...

    send_sms.delay("+4912345", "code 4711")          # a Job, with the task's options
    send_sms.options(priority=5).delay(...)          # other options for this call
    send_sms.s("+4912345", "hi")                     # a Signature, for rqconc.group
    send_sms("+4912345", "hi")                       # runs inline, here

The options are stored with each job exactly as `Queue.enqueue` stores them, so a worker
needs nothing new: it imports `module:qualname`, finds the Task there, and calls it, which
runs the function.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from typing import (
    Any,
    Callable,
    Coroutine,
    Dict,
    Generic,
    Optional,
    Tuple,
    TypeVar,
    Union,
    overload,
)

from rqconc.aio.queue import AsyncQueue
from rqconc.connection.clients import ConnectionLike
from rqconc.queue.job import Job
from rqconc.queue.options import OPTION_NAMES, common_fields
from rqconc.queue.queue import Queue
from rqconc.queue.retry import Retry
from rqconc.queue.serialization import function_name
from rqconc.queue.workflow.signature import Signature
from rqconc.store.keys import KeySpace, check_queue_name

if sys.version_info >= (3, 10):
    from typing import ParamSpec
else:  # pragma: no cover - Python 3.9
    from typing_extensions import ParamSpec

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

# Where a Task sends its jobs, as opposed to the options stored with each job.
_TARGET_NAMES = frozenset(("queue", "connection", "namespace"))


def _checked(options: Dict[str, Any], queue: str) -> Dict[str, Any]:
    """The enqueue options, checked now (TypeError for an unknown name, ValueError for a
    bad value) rather than at the first `.delay()`; None means "not set"."""
    options = {name: value for name, value in options.items() if value is not None}
    common_fields(options, queue, "json")
    return options


class Task(Generic[P, R]):
    """A function with a queue and enqueue options. Build one with `@rqconc.task`."""

    def __init__(
        self,
        func: Callable[P, R],
        queue: str = "default",
        *,
        connection: ConnectionLike = None,
        namespace: str = "rqconc",
        options: Optional[Dict[str, Any]] = None,
    ) -> None:
        # A worker imports the function by name: refuse what it could not import (lambdas,
        # nested functions, coroutines) now, as enqueue would. A script's __main__ may
        # still call its tasks inline; `.delay()` refuses it, as enqueue does.
        if getattr(func, "__module__", None) != "__main__":
            function_name(func)
        self.func = func
        self.queue_name = check_queue_name(queue)
        KeySpace(namespace)  # a bad namespace fails here, not at the first delay
        self.namespace = namespace
        self.connection = connection
        self._options = _checked(dict(options or {}), queue)
        self._queue: Optional[Queue] = None
        # aenqueue's AsyncQueue and the event loop its client belongs to (a redis.asyncio
        # client must not be used from another loop: a new loop gets a new queue).
        self._aqueue: Optional[Tuple[asyncio.AbstractEventLoop, AsyncQueue]] = None
        # Name, docstring and module of the function: the worker finds the Task under the
        # function's module:qualname, and help() shows the function.
        functools.update_wrapper(self, func)

    def __repr__(self) -> str:
        return f"<Task {self.func.__module__}:{self.func.__qualname__} queue={self.queue_name!r}>"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run the function inline, here (no queue, no worker)."""
        return self.func(*args, **kwargs)

    @property
    def default_options(self) -> Dict[str, Any]:
        """The enqueue options every `.delay()` of this task passes (a copy)."""
        return dict(self._options)

    def queue(self) -> Queue:
        """The task's Queue, built on first use (creating a Task touches no Redis)."""
        if self._queue is None:
            self._queue = Queue(self.queue_name, self.connection, namespace=self.namespace)
        return self._queue

    # job.get()'s type: what the function returns, what it awaits for an `async def` one
    # (the worker runs the coroutine: rqconc/queue/calling.py).
    @overload
    def delay(
        self: Task[P, Coroutine[Any, Any, T]], *args: P.args, **kwargs: P.kwargs
    ) -> Job[T]: ...

    @overload
    def delay(self: Task[P, T], *args: P.args, **kwargs: P.kwargs) -> Job[T]: ...

    def delay(self, *args: Any, **kwargs: Any) -> Job[Any]:
        """Enqueue `func(*args, **kwargs)` with the task's options; every keyword argument
        goes to the function (none is taken as an option)."""
        return self.queue().enqueue_call(self.func, args, kwargs, **self._options)

    def async_queue(self) -> AsyncQueue:
        """The task's AsyncQueue in the running event loop, built on first use there."""
        loop = asyncio.get_running_loop()
        if self._aqueue is None or self._aqueue[0] is not loop:
            queue = AsyncQueue(self.queue_name, self.connection, namespace=self.namespace)  # type: ignore[arg-type]
            self._aqueue = (loop, queue)
        return self._aqueue[1]

    async def aenqueue(self, *args: Any, **kwargs: Any) -> Any:
        """`delay` for async code (rqconc.aio): an AsyncJob; `connection` must then be a URL,
        a redis.asyncio client or None."""
        return await self.async_queue().enqueue_call(self.func, args, kwargs, **self._options)

    def options(self, **overrides: Any) -> Task[P, R]:
        """A copy with other options: any enqueue option (priority, timeout, retry, job_id,
        meta, ...), or `queue`, `connection`, `namespace`."""
        same_queue = _TARGET_NAMES.isdisjoint(overrides)
        copy: Task[P, R] = Task(
            self.func,
            overrides.pop("queue", self.queue_name),
            connection=overrides.pop("connection", self.connection),
            namespace=overrides.pop("namespace", self.namespace),
            options={**self._options, **overrides},
        )
        if same_queue:
            copy._queue = self._queue  # the same queue: share its connection
            copy._aqueue = self._aqueue
        return copy

    def s(self, *args: P.args, **kwargs: P.kwargs) -> Signature:
        """The call `func(*args, **kwargs)` with the task's options, not enqueued: for
        `rqconc.group(...)`."""
        return Signature(self.func, tuple(args), dict(kwargs), dict(self._options), self.namespace)


@overload
def task(queue: Callable[P, R]) -> Task[P, R]: ...


@overload
def task(
    queue: str = "default",
    *,
    priority: Optional[int] = None,
    timeout: Optional[float] = None,
    retry: Optional[Retry] = None,
    connection: ConnectionLike = None,
    namespace: str = "rqconc",
    **options: Any,
) -> Callable[[Callable[P, R]], Task[P, R]]: ...


def task(
    queue: Union[str, Callable[P, R]] = "default",
    *,
    priority: Optional[int] = None,
    timeout: Optional[float] = None,
    retry: Optional[Retry] = None,
    connection: ConnectionLike = None,
    namespace: str = "rqconc",
    **options: Any,
) -> Union[Task[P, R], Callable[[Callable[P, R]], Task[P, R]]]:
    """`@task` or `@task("sms", priority=..., timeout=..., retry=Retry(...), ...)`: make a
    module-level function a Task (see the module's docstring). `options`: any other enqueue
    option (result_ttl, failure_ttl, on_success, meta, ...), stored with every job; a fixed
    `job_id` is refused here (every delay would reuse it: pass it to `.options()`)."""
    if callable(queue):
        return Task(queue)
    if "job_id" in options:
        raise ValueError("a task's jobs each get their own id: pass job_id to .options(...)")
    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise TypeError(f"unknown task option(s): {', '.join(unknown)}")
    settings = dict(options, priority=priority, timeout=timeout, retry=retry)
    name = queue

    def decorate(func: Callable[P, R]) -> Task[P, R]:
        return Task(func, name, connection=connection, namespace=namespace, options=settings)

    return decorate
