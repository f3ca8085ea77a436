"""What Django's task framework sees of an rqconc job: the call stored for a task, its
priority, the task found again from its path, and the job read back as a `TaskResult`."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Dict, List, Optional

from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.module_loading import import_string

from rqconc import JobStatus
from rqconc.contrib.django.compat import (
    Task,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
)

# The job function every task runs through (rqconc.contrib.django.worker).
RUNNER = "rqconc.contrib.django.worker"
RUN_TASK = RUNNER + ":run_task"
RUN_ASYNC_TASK = RUNNER + ":run_async_task"

STATUSES = {
    JobStatus.QUEUED: TaskResultStatus.READY,
    JobStatus.SCHEDULED: TaskResultStatus.READY,  # run_after, or waiting to be retried
    JobStatus.DEFERRED: TaskResultStatus.READY,
    JobStatus.STARTED: TaskResultStatus.RUNNING,
    JobStatus.FINISHED: TaskResultStatus.SUCCESSFUL,
    JobStatus.FAILED: TaskResultStatus.FAILED,
    JobStatus.CANCELED: TaskResultStatus.FAILED,
}


def rqconc_priority(django_priority: int) -> int:
    """Django's -100..100 onto rqconc's 0..100; both run higher numbers first. Halved and
    rounded down, so the order holds: -100 and -99 become 0, ..., 98 and 99 become 99, 100
    stays 100, and Django's default 0 is 50 (above rqconc's own default of 1)."""
    return (django_priority + 100) // 2


def stored_call(task: Task, args: Any, kwargs: Any, alias: str) -> List[Any]:
    """The arguments of the runner's job: what the task is, then its own arguments."""
    run_after = task.run_after.isoformat() if task.run_after else None
    spec = {"task": task.module_path, "backend": alias, "priority": task.priority}
    return [dict(spec, run_after=run_after), list(args), dict(kwargs)]


def find_task(path: str) -> Task:
    """The Task object at `path`. The path comes from Redis, so only a module of an
    installed app is imported, and only a Task there is run (as the worker's allow-list
    keeps other modules from being imported)."""
    module = path.rpartition(".")[0]
    if apps.get_containing_app_config(module) is None:
        raise ValueError(f"{path} is not in a module of an installed app: not imported")
    found = import_string(path)
    if not isinstance(found, Task):
        raise ValueError(f"{path} is not a task (decorate it with @task)")
    return found


def _local(moment: Optional[datetime]) -> Optional[datetime]:
    # rqconc's times are aware (UTC); a project with USE_TZ = False uses naive local times.
    if moment is None or settings.USE_TZ:
        return moment
    return timezone.make_naive(moment)


def _errors(record: Any) -> List[TaskError]:
    exc_type = record.field("exc_type")
    if not exc_type:
        return []
    # rqconc names builtins without their module ("ValueError"); Django imports the path.
    path = exc_type if "." in exc_type else "builtins." + exc_type
    trace = record.field("traceback") or f"{exc_type}: {record.field('exc_message') or ''}"
    return [TaskError(exception_class_path=path, traceback=trace)]


def task_result(record: Any, task: Optional[Task] = None) -> TaskResult:
    """The TaskResult of a job of the runner (`record`: a Job or AsyncJob as last read).
    rqconc keeps the latest attempt's worker only: `worker_ids` repeats it once per attempt
    started, so that `attempts` counts right."""
    if record.func_name not in (RUN_TASK, RUN_ASYNC_TASK):
        raise TaskResultDoesNotExist(f"job {record.id} is not a Django task")
    spec, args, kwargs = record.args
    status = STATUSES[JobStatus(record.field("status") or JobStatus.QUEUED)]
    if task is None:
        run_after = parse_datetime(spec["run_after"]) if spec["run_after"] else None
        task = find_task(spec["task"]).using(
            priority=spec["priority"], queue_name=record.queue_name, run_after=run_after
        )
    started = int(record.field("attempts") or 0) + (status == TaskResultStatus.RUNNING)
    worker = record.worker_name
    result = TaskResult(
        task=task,
        id=record.id,
        status=status,
        # Redis stamps enqueued_at; a job just enqueued knows its created_at (the same moment).
        enqueued_at=_local(record.enqueued_at or record.created_at),
        started_at=_local(record.started_at),
        last_attempted_at=_local(record.started_at),
        finished_at=_local(record.ended_at) if status in _ENDED else None,
        args=args,
        kwargs=kwargs,
        backend=spec["backend"],
        errors=_errors(record),
        worker_ids=[worker] * started if worker else [],
    )
    if status == TaskResultStatus.SUCCESSFUL:
        object.__setattr__(result, "_return_value", _return_value(record))
    return result


_ENDED = (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED)


def _return_value(record: Any) -> Any:
    # The backend's queues are JSON queues (a pickled value could not be a task's result).
    stored = record.field("result")
    return None if stored is None else json.loads(stored)


def enqueue_options(options: Dict[str, Any]) -> Dict[str, Any]:
    """OPTIONS less `url` and `namespace`: the enqueue defaults of every task."""
    defaults = {k: v for k, v in options.items() if k not in ("url", "namespace")}
    unknown = sorted(set(defaults) - set(ENQUEUE_DEFAULTS))
    if unknown:
        raise ImproperlyConfigured(
            f"RqconcBackend OPTIONS has no {', '.join(unknown)}: it takes url, namespace, "
            f"{', '.join(ENQUEUE_DEFAULTS)}"
        )
    return defaults


ENQUEUE_DEFAULTS = ("timeout", "result_ttl", "failure_ttl", "retry")
