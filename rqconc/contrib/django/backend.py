"""`RqconcBackend`: a backend of Django's task framework (`TASKS` setting) on rqconc.

    TASKS = {"default": {
        "BACKEND": "rqconc.contrib.django.RqconcBackend",
        "QUEUES": ["default", "emails"],
        "OPTIONS": {"url": "redis://localhost:6379/0", "namespace": "rqconc", "timeout": 60},
    }}

A task is stored as a job of rqconc's queue of the same name, calling the runner
(worker.py) with the task's path and arguments; its TaskResult id is the job's id."""

from __future__ import annotations

import asyncio
import weakref
from inspect import iscoroutinefunction
from typing import Any, Dict, MutableMapping, Optional

from django.utils import timezone

from rqconc import Job, NoSuchJob, Queue
from rqconc.aio import AsyncQueue
from rqconc.contrib.django.compat import (
    BaseTaskBackend,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    task_enqueued,
)
from rqconc.contrib.django.results import (
    RUN_ASYNC_TASK,
    RUN_TASK,
    enqueue_options,
    rqconc_priority,
    stored_call,
    task_result,
)


class RqconcBackend(BaseTaskBackend):
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: Dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.url = self.options.get("url")
        self.namespace = self.options.get("namespace", "rqconc")
        self.defaults = enqueue_options(self.options)
        self._queues: Dict[str, Queue] = {}
        # redis.asyncio clients belong to the event loop that opened them: queues per loop.
        self._async_queues: MutableMapping[Any, Dict[str, AsyncQueue]] = weakref.WeakKeyDictionary()

    # ---- enqueueing ----
    def _options(self, task: Task) -> Dict[str, Any]:
        """The options of the task's job (the call goes beside them)."""
        self.validate_task(task)
        options = dict(self.defaults, priority=rqconc_priority(task.priority))
        options["description"] = f"{task.module_path}(...)"
        return options

    def _when(self, task: Task) -> Optional[Any]:
        run_after = task.run_after
        if run_after is not None and timezone.is_naive(run_after):  # USE_TZ = False
            run_after = timezone.make_aware(run_after)
        return run_after

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        options = self._options(task)
        func = RUN_ASYNC_TASK if iscoroutinefunction(task.func) else RUN_TASK
        call = stored_call(task, args, kwargs, self.alias)
        queue, when = self._queue(task.queue_name), self._when(task)
        if when is None:
            job = queue.enqueue_call(func, call, {}, **options)
        else:
            job = queue.enqueue_at(when, func, *call, **options)
        return self._enqueued(task, job)

    async def aenqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        options = self._options(task)
        func = RUN_ASYNC_TASK if iscoroutinefunction(task.func) else RUN_TASK
        call = stored_call(task, args, kwargs, self.alias)
        queue, when = self._async_queue(task.queue_name), self._when(task)
        if when is None:
            job = await queue.enqueue_call(func, call, {}, **options)
        else:
            job = await queue.enqueue_at(when, func, *call, **options)
        return self._enqueued(task, job)

    def _enqueued(self, task: Task, job: Any) -> TaskResult:
        result = task_result(job, task)
        task_enqueued.send(type(self), task_result=result)
        return result

    # ---- results ----
    def get_result(self, result_id: str) -> TaskResult:
        try:
            job = Job.fetch(result_id, self._queue("default").connection, self.namespace)
        except NoSuchJob:
            raise TaskResultDoesNotExist(result_id) from None
        return task_result(job)

    async def aget_result(self, result_id: str) -> TaskResult:
        try:
            job = await self._async_queue("default").fetch_job(result_id)
        except NoSuchJob:
            raise TaskResultDoesNotExist(result_id) from None
        return task_result(job)

    # ---- rqconc's queues ----
    def _queue(self, name: str) -> Queue:
        queue = self._queues.get(name)
        if queue is None:
            # One client for every queue: the first queue's (opened on first use).
            first = next(iter(self._queues.values()), None)
            connection = first.connection if first is not None else self.url
            queue = self._queues[name] = Queue(name, connection, namespace=self.namespace)
        return queue

    def _async_queue(self, name: str) -> AsyncQueue:
        queues = self._async_queues.setdefault(asyncio.get_running_loop(), {})
        queue = queues.get(name)
        if queue is None:
            queue = queues[name] = AsyncQueue(name, self.url, namespace=self.namespace)
        return queue
