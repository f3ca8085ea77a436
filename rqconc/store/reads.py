"""Plain reads written once for both transports (redis-py and redis.asyncio): a read is a
generator that yields a round trip's commands, as (method name, *arguments), and is sent
back their replies; `read` runs it on a redis-py client, `aread` on a redis.asyncio one."""

from __future__ import annotations

from typing import Any, Generator, List, Tuple

from rqconc.store.keys import KeySpace

Commands = List[Tuple[Any, ...]]
Read = Generator[Commands, List[Any], Any]


def read(reads: Read, client: Any) -> Any:
    """Run `reads` on a redis-py client: each round trip one pipeline."""
    try:
        commands = next(reads)
        while True:
            pipe = client.pipeline(transaction=False)
            for name, *args in commands:
                getattr(pipe, name)(*args)
            commands = reads.send(pipe.execute())
    except StopIteration as done:
        return done.value


async def aread(reads: Read, client: Any) -> Any:
    """Run `reads` on a redis.asyncio client: each round trip one pipeline."""
    try:
        commands = next(reads)
        while True:
            pipe = client.pipeline(transaction=False)
            for name, *args in commands:
                getattr(pipe, name)(*args)
            commands = reads.send(await pipe.execute())
    except StopIteration as done:
        return done.value


def job_log(keys: KeySpace, job_id: str) -> Read:
    """The lines a job logged, oldest first (empty when it logged none or is gone)."""
    (lines,) = yield [("lrange", keys.log(job_id), 0, -1)]
    return [line.decode("utf-8", "replace") if isinstance(line, bytes) else line for line in lines]
