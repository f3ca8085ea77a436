"""The public `rqconc.Supervisor`: the engine's supervisor fed by Redis queues."""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Any, Optional, Sequence, Union

import redis

from rqconc.engine.source import WorkSource
from rqconc.engine.states import SupervisorState
from rqconc.engine.supervisor import BaseSupervisor
from rqconc.worker.source import RedisSource


def default_worker_name() -> str:
    return f"{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:4]}"


class Supervisor(BaseSupervisor):
    """`Supervisor(backend="threading", size=8, queues=["sms"]).run()`.

    Without `source=`, children take jobs from `queues` on the Redis of `connection`
    (a URL or a redis.Redis client, as for Queue; default: REDIS_URL, else the embedded
    server). Only functions of modules under an `allow` prefix run (a list, or one prefix
    as a str), besides rqconc's demo tasks. Jobs of a pickle queue run only with
    `allow_pickle=True`. `cli=True` (the rqconc command line) makes the not-allowed hint
    name `--allow` instead of this constructor's `allow=`."""

    def __init__(
        self,
        backend: Union[str, type] = "forking",
        size: int = 1,
        queues: Sequence[str] = ("default",),
        *,
        connection: Union[str, redis.Redis, None] = None,
        strategy: str = "ordered",
        allow: Union[str, Sequence[str]] = (),
        lease_seconds: float = 15,
        max_lost: int = 3,
        namespace: str = "rqconc",
        name: Optional[str] = None,
        source: Optional[WorkSource] = None,
        allow_pickle: bool = False,
        cli: bool = False,
        **engine_options: Any,
    ) -> None:
        # One name is one name: a str is a Sequence whose items are its letters.
        if isinstance(queues, str):
            queues = [queues]
        if isinstance(allow, str):
            allow = [allow]
        name = name or default_worker_name()
        if source is None:
            source = RedisSource(
                url=connection,
                queues=list(queues),
                strategy=strategy,
                allow=list(allow),
                lease_seconds=lease_seconds,
                max_lost=max_lost,
                namespace=namespace,
                name=name,
                allow_pickle=allow_pickle,
                cli=cli,
            )
        self.queues = list(queues)
        super().__init__(backend, size, source, name=name, **engine_options)

    def wait_ready(self, timeout: float = 30) -> Supervisor:
        """After `start()`: wait until all `size` children are up (idle or busy), so that
        `children` lists them; returns self. RuntimeError if the supervisor stopped first
        (a child failed to boot, or Redis refused it), TimeoutError after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            if self.state is SupervisorState.STOPPED or self.boot_error:
                raise RuntimeError(
                    f"supervisor {self.name} stopped before its children were up"
                    + (f": {self.boot_error}" if self.boot_error else "")
                )
            up = [c for c in self.children if c.state in ("idle", "busy")]
            if len(up) >= self.size:
                return self
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(up)} of {self.size} children up after {timeout} s")
            # The supervisor's own thread spawns them; a short poll costs nothing here.
            time.sleep(0.02)
