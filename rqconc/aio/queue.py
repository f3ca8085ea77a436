"""`AsyncQueue`: the producer API for async code (SPEC 15), on a redis.asyncio client.

One implementation of the rules, two transports: an enqueue is planned by the very code
`Queue` uses (rqconc/queue/enqueue_plan.py: the checks, job_fields.py's fields, the Lua step
with its keys and arguments, the refusals), and only running the step differs: here
`await step.arun(client)` (by SHA, loading the script when Redis lacks it), in `Queue`
`step.run(client)`.
A job enqueued either way is the same job. An eager queue (RQCONC_EAGER) runs each job
inline through `Queue`'s eager runner, in a thread, so the event loop never waits on it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from redis.asyncio import RedisCluster

from rqconc.aio.batch import StepBatch
from rqconc.aio.job import AsyncEagerJob, AsyncJob
from rqconc.connection.aio import AsyncConnectionLike, check_connection, connect_async, ready
from rqconc.connection.clients import translated_errors
from rqconc.connection.replicas import DEFAULT_WAIT_TIMEOUT, ReplicaWait
from rqconc.queue.eager import EagerRunner, eager_mode
from rqconc.queue.enqueue_plan import EnqueuePlan, GroupPlan, check_group
from rqconc.queue.job_fields import JobFields
from rqconc.queue.limits.parked import waiting_count_reads
from rqconc.queue.options import (
    Call,
    Func,
    batch_of,
    check_event_detail,
    due_ms_at,
    due_ms_in,
    queue_defaults,
    take_options,
)
from rqconc.queue.placement import check_options
from rqconc.queue.retry import Retry
from rqconc.queue.serialization import get_serializer
from rqconc.queue.workflow.signature import Signature
from rqconc.store.keys import KeySpace, check_queue_name
from rqconc.store.reads import aread
from rqconc.store.scripts import now_ms

Handed = Union[AsyncJob, AsyncEagerJob]


class AsyncQueue:
    """A named queue of jobs for async code. `connection`: a URL, a `redis.asyncio.Redis`
    (or RedisCluster), or None (REDIS_URL, else the embedded server: SPEC section 6)."""

    def __init__(
        self,
        name: str = "default",
        connection: AsyncConnectionLike = None,
        serializer: str = "json",
        namespace: str = "rqconc",
        default_timeout: Optional[float] = None,
        default_result_ttl: Optional[int] = None,
        default_retry: Optional[Retry] = None,
        event_detail: str = "basic",
        eager: Optional[bool] = None,
        wait_replicas: int = 0,
        wait_timeout: float = DEFAULT_WAIT_TIMEOUT,
    ) -> None:
        check_connection(connection)
        self.name = check_queue_name(name)
        self.wait = ReplicaWait(wait_replicas, wait_timeout)
        self.serializer = get_serializer(serializer)
        self.keys = KeySpace(namespace)
        defaults = queue_defaults(default_timeout, default_result_ttl, default_retry)
        self.fields = JobFields(name, namespace, self.serializer, defaults, event_detail)
        check_event_detail(event_detail)
        self._connection_arg = connection
        self._client: Any = None
        self._batch: Optional[StepBatch] = None
        self._opening: Optional[asyncio.Lock] = None
        self._eager = EagerRunner(self) if eager_mode(eager) else None

    def __repr__(self) -> str:
        return f"AsyncQueue({self.name!r}, namespace={self.keys.namespace!r})"

    @property
    def eager(self) -> bool:
        return self._eager is not None

    async def connection(self) -> Any:
        """The queue's redis.asyncio client, opened on first use (once: the coroutines that
        ask meanwhile wait for it)."""
        if self._client is None:
            if self._eager is not None:
                raise RuntimeError(f"{self!r} is eager (docs/testing.md): it has no Redis")
            if self._opening is None:
                self._opening = asyncio.Lock()
            async with self._opening:
                if self._client is None:
                    await self._open()
        return self._client

    async def _open(self) -> None:
        client = await connect_async(self._connection_arg)
        with translated_errors(client):  # a Cluster client asks for the slots now
            await ready(client)
        # A RedisCluster client sends each step alone: a pipeline of it splits by slot
        # and node, and WAIT would count one node's writes.
        if not isinstance(client, RedisCluster):
            self._batch = StepBatch(client, self.wait)
        self._client = client

    async def aclose(self) -> None:
        """Close the client this queue opened (one passed in is the caller's to close)."""
        if self._client is not None and self._client is not self._connection_arg:
            await self._client.aclose()
        self._client, self._batch = None, None

    # ---- enqueueing: as Queue's, awaited ----
    async def enqueue(self, func: Func, *args: Any, **kwargs: Any) -> Handed:
        """As `Queue.enqueue`: the keyword options are taken out of kwargs."""
        options = take_options(kwargs)
        return (await self._store([(func, args, kwargs)], options, None))[0]

    async def enqueue_call(
        self,
        func: Func,
        args: Sequence[Any] = (),
        kwargs: Optional[Dict[str, Any]] = None,
        **options: Any,
    ) -> Handed:
        return (await self._store([(func, tuple(args), dict(kwargs or {}))], options, None))[0]

    async def enqueue_at(
        self, when: Union[datetime, int, float], func: Func, *args: Any, **kwargs: Any
    ) -> Handed:
        """As `enqueue`, but the job waits (status `scheduled`) until `when`."""
        options = take_options(kwargs)
        return (await self._store([(func, args, kwargs)], options, due_ms_at(when)))[0]

    async def enqueue_in(
        self, delay: Union[timedelta, int, float], func: Func, *args: Any, **kwargs: Any
    ) -> Handed:
        """As `enqueue`, but the job waits (status `scheduled`) for `delay`."""
        options = take_options(kwargs)
        due_ms = due_ms_in(delay, now_ms())
        return (await self._store([(func, args, kwargs)], options, due_ms))[0]

    async def enqueue_many(self, calls: Iterable[Sequence[Any]], **options: Any) -> List[Handed]:
        """As `Queue.enqueue_many`: a batch in one round trip, the jobs in order."""
        batch = batch_of(calls, options)
        return await self._store(batch, options, None) if batch else []

    async def enqueue_group(self, calls: Sequence[Any], chord: Optional[Signature] = None) -> Any:
        """As `Queue.enqueue_group` (what `await group(...).aenqueue(queue)` calls): an
        AsyncGroup."""
        check_group(self.keys.namespace, calls, chord)
        if self._eager is not None:
            return await asyncio.to_thread(self._eager.enqueue_group, calls, chord)
        plan = GroupPlan(self.prepare, self.keys, self.name, calls, chord)
        client = await self.connection()
        with translated_errors(client):
            await plan.step.arun(client, self.wait)
        jobs = [self._job(i, client, fields) for i, fields in plan.members]
        chord_job = None
        if plan.callback is not None:
            chord_job = self._job(plan.callback[0], client, plan.callback[1])
        return AsyncGroup(plan.group_id, jobs, chord_job)

    async def _store(
        self, calls: Sequence[Call], options: Dict[str, Any], due_ms: Optional[int]
    ) -> List[Handed]:
        check_options(self.keys.namespace, options)
        if self._eager is not None:
            ran = await asyncio.to_thread(self._eager.run, calls, options, due_ms)
            return [AsyncEagerJob(job) for job in ran]
        plan = EnqueuePlan(self.fields, self.keys, self.name, calls, options, due_ms)
        try:
            client = await self.connection()
            with translated_errors(client):
                if plan.resendable and self._batch is not None:
                    reply = await self._batch.run(plan.step)  # with this turn's others
                else:
                    reply = await plan.step.arun(client, self.wait)
        except BaseException as error:
            plan.abandoned(error)
            raise
        jobs: List[Handed] = [self._job(i, client, fields) for i, fields in plan.stored(reply)]
        if plan.holder_is_another(reply):  # the job that holds the key: its own fields
            await jobs[0].refresh()
        return jobs

    def _job(self, job_id: str, client: Any, fields: Dict[str, str]) -> AsyncJob:
        job = AsyncJob.stored(job_id, client, self.keys, fields)
        job.wait = self.wait
        return job

    def prepare(self, calls: Sequence[Call], options: Dict[str, Any]) -> Any:
        """As `Queue.prepare` (what the eager runner and group plans call)."""
        return self.fields.prepare(calls, options)

    # ---- reading ----
    async def count(self) -> int:
        """As `Queue.count`: the jobs waiting, with those parked behind their group's cap."""
        client = await self.connection()
        with translated_errors(client):
            return int(await aread(waiting_count_reads(self.keys, self.name), client))

    async def fetch_job(self, job_id: str) -> AsyncJob:
        """The job `job_id`; NoSuchJob if it does not exist (any more)."""
        job = AsyncJob(job_id, await self.connection(), self.keys, {}, allow_pickle=self._pickled)
        job.wait = self.wait
        await job.refresh()
        return job

    async def fetch_jobs(self, job_ids: Sequence[str]) -> List[Optional[AsyncJob]]:
        """Jobs read in one round trip, in order; None where a job does not exist."""
        client = await self.connection()
        pipe = client.pipeline(transaction=False)
        for job_id in job_ids:
            pipe.hgetall(self.keys.job(job_id))
        with translated_errors(client):
            found = await pipe.execute()
        jobs: List[Optional[AsyncJob]] = []
        for job_id, raw in zip(job_ids, found):
            job = AsyncJob(job_id, client, self.keys, raw, allow_pickle=self._pickled)
            job.wait = self.wait
            jobs.append(job if raw else None)
        return jobs

    @property
    def _pickled(self) -> bool:
        return self.serializer.name == "pickle"  # a JSON queue's client never unpickles


class AsyncGroup:
    """A group enqueued by `await group(...).aenqueue(queue)`: its AsyncJobs, a chord's
    callback job, and `await get()` for their results in group order."""

    def __init__(self, group_id: str, jobs: List[AsyncJob], chord: Optional[AsyncJob]) -> None:
        self.id, self.jobs, self.chord = group_id, jobs, chord

    def __repr__(self) -> str:
        return f"AsyncGroup({self.id!r}, {len(self.jobs)} jobs)"

    async def get(self, timeout: Optional[float] = None) -> List[Any]:
        """Every job's return value, in group order; JobFailed of the first that failed."""
        return list(await asyncio.gather(*(job.get(timeout) for job in self.jobs)))
