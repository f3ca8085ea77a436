"""`q.failed`: the dead letters of a queue — jobs whose retries ran out or that failed for
good — with their tracebacks kept on the job (`Job.exc_info`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, List

from rqconc.connection import translated_errors
from rqconc.job import Job
from rqconc.scripts import Steps, text

if TYPE_CHECKING:
    from rqconc.queue import Queue


class DeadLetters:
    def __init__(self, queue: Queue) -> None:
        self.queue = queue

    @property
    def _steps(self) -> Steps:
        return Steps(self.queue.connection, self.queue.keys)

    @property
    def job_ids(self) -> List[str]:
        """Ids of the dead letters, oldest failure first."""
        client = self.queue.connection
        with translated_errors(client):
            return [text(i) for i in client.zrange(self.queue.keys.failed(self.queue.name), 0, -1)]

    def __len__(self) -> int:
        client = self.queue.connection
        with translated_errors(client):
            return int(client.zcard(self.queue.keys.failed(self.queue.name)))

    def __contains__(self, job_id: str) -> bool:
        client = self.queue.connection
        with translated_errors(client):
            return client.zscore(self.queue.keys.failed(self.queue.name), job_id) is not None

    def jobs(self) -> List[Job]:
        return [self.queue.fetch_job(job_id) for job_id in self.job_ids]

    def requeue(self, job_id: str) -> bool:
        """Run it again: back at the end of its queue, same id, attempts reset.
        False if `job_id` is not a dead letter of this queue."""
        with translated_errors(self.queue.connection):
            return self._steps.requeue_failed(self.queue.name, job_id)

    def requeue_all(self) -> int:
        """Requeue every dead letter (in failure order); returns how many."""
        return sum(self.requeue(job_id) for job_id in self.job_ids)

    def purge(self) -> int:
        """Delete every dead letter and its data; returns how many."""
        with translated_errors(self.queue.connection):
            return self._steps.purge_failed(self.queue.name, self.job_ids)
