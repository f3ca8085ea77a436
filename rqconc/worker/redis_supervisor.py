"""The public `rqconc.Supervisor`: the engine's supervisor fed by Redis queues."""

from __future__ import annotations

import math
import os
import socket
import time
import uuid
from typing import Any, Dict, List, Optional, Sequence, Union

import redis

from rqconc.connection.replicas import DEFAULT_WAIT_TIMEOUT, ReplicaWait
from rqconc.engine.source import WorkSource
from rqconc.engine.states import SupervisorState
from rqconc.engine.supervisor import BaseSupervisor
from rqconc.queue.workflow.callbacks import CALLBACK_TIMEOUT, WEBHOOK_TIMEOUT
from rqconc.worker.event_retention import EventRetention
from rqconc.worker.hooks import Hooks, HookSpec
from rqconc.worker.namespaces import source_for
from rqconc.worker.redis_source import RedisSource
from rqconc.worker.registry import DEFAULT_TTL
from rqconc.worker.taking import MAX_BLOCK


def one_or_many(names: Union[str, Sequence[str]]) -> List[str]:
    return [names] if isinstance(names, str) else list(names)


def checked_seconds(**settings: float) -> Dict[str, float]:
    """Duration settings, each a finite number of seconds above 0."""
    for setting, value in settings.items():
        shown = "worker_ttl" if setting == "registry_ttl" else setting  # the Supervisor's name
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{shown} must be a number of seconds, not {value!r}")
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{shown} must be a finite number of seconds above 0, not {value!r}")
    return settings


def default_worker_name() -> str:
    return f"{socket.gethostname()}.{os.getpid()}.{uuid.uuid4().hex[:4]}"


class Supervisor(BaseSupervisor):
    """`Supervisor(backend="threading", size=8, queues=["sms"]).run()`.

    Without `source=`, children take jobs from `queues` on the Redis of `connection`
    (a URL or a redis.Redis client, as for Queue; default: REDIS_URL, else the embedded
    server). Only functions of modules under an `allow` prefix run (a list, or one prefix
    as a str), besides rqconc's demo tasks. Jobs of a pickle queue run only with
    `allow_pickle=True`. `cli=True` (the rqconc command line) makes the not-allowed hint
    name `--allow` instead of this constructor's `allow=`.

    `namespace` is one name, or several (a list or a comma string): the worker then takes
    from the same `queues` in each namespace in turn (rqconc/worker/namespaces.py).

    Seconds: `worker_ttl`, how long the registry lists it without a heartbeat; `take_wait`,
    the longest an idle child blocks on its queues (a stop is seen at least this often);
    `webhook_timeout`, one webhook POST; `callback_timeout`, a callback or webhook job that
    carries no timeout of its own. `wait_replicas=N`: each state change returns only once N
    replicas acknowledged it (Redis WAIT, up to `wait_timeout` s; docs/reliability.md).
    `events=EventRetention(seconds, max_entries)`: what its maintenance pass keeps of the
    event stream (SPEC 18; default 24 h, at most 1,000,000 entries).

    `hooks`: objects or modules (or module names) with any of the hook functions of
    rqconc/worker/hooks.py (docs/hooks.md)."""

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
        namespace: Union[str, Sequence[str]] = "rqconc",
        name: Optional[str] = None,
        source: Optional[WorkSource] = None,
        allow_pickle: bool = False,
        cli: bool = False,
        worker_ttl: float = DEFAULT_TTL,
        take_wait: float = MAX_BLOCK,
        webhook_timeout: float = WEBHOOK_TIMEOUT,
        callback_timeout: float = CALLBACK_TIMEOUT,
        wait_replicas: int = 0,
        wait_timeout: float = DEFAULT_WAIT_TIMEOUT,
        hooks: Union[Hooks, Sequence[HookSpec]] = (),
        events: Optional[EventRetention] = None,
        **engine_options: Any,
    ) -> None:
        # One name is one name: a str is a Sequence whose items are its letters.
        queues, allow, name = one_or_many(queues), one_or_many(allow), name or default_worker_name()
        timings = checked_seconds(registry_ttl=worker_ttl, take_wait=take_wait,
            webhook_timeout=webhook_timeout, callback_timeout=callback_timeout)  # fmt: skip
        self.hooks = hooks if isinstance(hooks, Hooks) else Hooks(hooks)
        wait = ReplicaWait(wait_replicas, wait_timeout)
        if source is None:  # one namespace, or a round-robin over several (namespaces.py)
            source = source_for(namespace, lambda ns: RedisSource(connection, queues, strategy,
                allow, lease_seconds, max_lost, ns, name, wait=wait, allow_pickle=allow_pickle,
                cli=cli, hooks=self.hooks, events=events,
                burst=bool(engine_options.get("burst")), **timings))  # fmt: skip
        self.queues = queues
        engine_options.setdefault("take_timeout", take_wait)  # a take lasts at most that wait
        super().__init__(backend, size, source, name=name, **engine_options)

    def _serve(self) -> int:
        # Once per worker, in the supervisor, around its whole run (hooks.py).
        self.hooks.call("on_worker_start", self)
        try:
            return super()._serve()
        finally:
            self.hooks.call("on_worker_stop", self)

    def wait_ready(self, timeout: float = 30) -> Supervisor:
        """After `start()`: wait until all `size` children (each with its `slots`) are up,
        so that `children` lists them; returns self. RuntimeError if the supervisor stopped first
        (a child failed to boot, or Redis refused it), TimeoutError after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            if self.state is SupervisorState.STOPPED or self.boot_error:
                raise RuntimeError(
                    f"supervisor {self.name} stopped before its children were up"
                    + (f": {self.boot_error}" if self.boot_error else "")
                )
            up = [c for c in self.children if c.state in ("idle", "busy")]
            wanted = self.size * self.slots_per_child  # `children` lists every slot
            if len(up) >= wanted:
                return self
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(up)} of {wanted} children up after {timeout} s")
            # The supervisor's own thread spawns them; a short poll costs nothing here.
            time.sleep(0.02)
