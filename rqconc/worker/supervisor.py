"""The public `rqconc.Supervisor`: the engine's supervisor fed by Redis queues."""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any, Optional, Sequence, Union

from rqconc.engine.source import WorkSource
from rqconc.engine.supervisor import BaseSupervisor
from rqconc.worker.source import RedisSource


def default_worker_name() -> str:
    return f"{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:4]}"


class Supervisor(BaseSupervisor):
    """`Supervisor(backend="threading", size=8, queues=["sms"]).run()`.

    Without `source=`, children take jobs from `queues` on the Redis of `connection`
    (a URL; default: REDIS_URL, else the embedded server). Jobs of a pickle queue run only
    with `allow_pickle=True`."""

    def __init__(
        self,
        backend: Union[str, type] = "forking",
        size: int = 1,
        queues: Sequence[str] = ("default",),
        *,
        connection: Optional[str] = None,
        strategy: str = "ordered",
        allow: Sequence[str] = (),
        lease_seconds: float = 15,
        max_lost: int = 3,
        namespace: str = "rqconc",
        name: Optional[str] = None,
        source: Optional[WorkSource] = None,
        allow_pickle: bool = False,
        **engine_options: Any,
    ) -> None:
        if isinstance(queues, str):
            queues = [queues]
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
            )
        self.queues = list(queues)
        super().__init__(backend, size, source, name=name, **engine_options)
