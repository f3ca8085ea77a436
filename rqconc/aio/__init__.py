"""rqconc for async code (SPEC 15): `AsyncQueue` and `AsyncJob`, the producer API with
coroutine methods, on redis.asyncio (docs/async.md). `@task` functions have `aenqueue`,
groups `aenqueue(queue)`."""

from rqconc.aio.job import AsyncEagerJob, AsyncJob
from rqconc.aio.queue import AsyncGroup, AsyncQueue

__all__ = ["AsyncEagerJob", "AsyncGroup", "AsyncJob", "AsyncQueue"]
