"""A user's typed module calling the public API: tests/typing/test_mypy_strict.py runs
`mypy --strict` on it (SPEC section 12). It is type-checked, never run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Dict, List, Optional

import rqconc
from rqconc import Job, JobFailed, JobStatus, Priority, Queue, Retry, Supervisor, task


@task("sms", priority=Priority.HIGH, timeout=30, retry=Retry(max=3, backoff=1.5))
def send_sms(number: str, text: str) -> str:
    return f"{text} -> {number}"


@rqconc.task
def count(words: List[str]) -> int:
    return len(words)


@rqconc.task
async def fetch(url: str) -> bytes:
    return url.encode()


def use_tasks() -> int:
    inline: str = send_sms("+49", "hi")
    job: Job = send_sms.delay("+49", "hi")
    urgent: Job = send_sms.options(priority=5, timeout=10).delay("+49", text="now")
    queue: Queue = send_sms.queue()
    signature = count.s(["a", "b"])
    # get() returns the function's type: what it returns, what it awaits if async
    sent: str = send_sms.delay("+49", "again").get(timeout=5)
    counted: int = count.delay(["a"]).get()
    body: bytes = fetch.delay("https://example.com").get()
    print(sent, counted, body)
    return len(inline) + len(job.id) + len(urgent.id) + len(queue.name) + len(signature.args)


def use_queue(url: str) -> Optional[int]:
    q = Queue("sms", connection=url, default_timeout=60.0)
    job = q.enqueue(send_sms, "+49", "code", priority=Priority.HIGH, retry=Retry(max=2))
    later: Job = q.enqueue_in(timedelta(seconds=5), "myapp.tasks:send_sms", "+49", "x")
    q.promote(later.id)
    jobs: List[Optional[Job]] = q.fetch_jobs([job.id, later.id])
    status: JobStatus = job.status
    try:
        value: Any = job.get(timeout=1.5)
    except JobFailed as failed:
        value = failed.exc_type
    meta: Dict[str, Any] = job.meta
    removed: int = q.delete()
    deleted: bool = job.delete()
    print(status, value, meta, removed, deleted, len(jobs), q.count, q.job_ids)
    return job.position


def use_supervisor() -> int:
    sup = Supervisor(backend="threading", size=4, queues=["sms"])
    sup.start()
    sup.stop(graceful=True)
    code: int = sup.run()
    return code
