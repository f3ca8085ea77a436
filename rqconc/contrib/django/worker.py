"""The worker side of the Django backend: each child's set-up (`rqconc worker --django
SETTINGS` preloads `setup`), and the job functions every Django task runs through.

Around each task the database connections Django opened are closed, as Django's request
cycle does (`close_old_connections` when a request starts and when it ends): a child lives
for many jobs, and a connection left open between them would be held idle, or be dead by
the next job."""

from __future__ import annotations

from typing import Any, Dict, List

import django
from asgiref.sync import sync_to_async
from django.apps import apps
from django.db import close_old_connections

from rqconc import Job, get_current_job
from rqconc.contrib.django.compat import TaskContext, normalize_json
from rqconc.contrib.django.results import find_task, task_result

# What `--django` adds to a worker's --preload.
SETUP = __name__ + ":setup"


def setup() -> None:
    """django.setup() once in this process (DJANGO_SETTINGS_MODULE names the settings)."""
    if not apps.ready:
        django.setup()


def _call_args(args: List[Any], task: Any) -> List[Any]:
    if not task.takes_context:
        return args
    # The job as stored now (started): the running attempt's number and times.
    current = get_current_job()
    if current is None:
        raise RuntimeError("a Django task runs as an rqconc job (rqconc worker --django)")
    job = Job.fetch(current.id, current.connection, current.namespace)
    return [TaskContext(task_result=task_result(job)), *args]


def run_task(spec: Dict[str, Any], args: List[Any], kwargs: Dict[str, Any]) -> Any:
    """Run the task `spec` names; its return value as Django stores it (JSON)."""
    setup()
    task = find_task(spec["task"])
    close_old_connections()
    try:
        return normalize_json(task.call(*_call_args(args, task), **kwargs))
    finally:
        close_old_connections()


async def run_async_task(spec: Dict[str, Any], args: List[Any], kwargs: Dict[str, Any]) -> Any:
    """As run_task, for an `async def` task: awaited on the child's event loop."""
    setup()
    task = find_task(spec["task"])
    await sync_to_async(close_old_connections)()
    try:
        call_args = _call_args(args, task)  # a short blocking read, takes_context only
        return normalize_json(await task.acall(*call_args, **kwargs))
    finally:
        await sync_to_async(close_old_connections)()
