"""The worker's ways to Redis: the supervisor's pooled client, and per child (process, thread
or greenlet) its own direct connection for the steps every job pays for.

Nothing here crosses a process boundary: a pickled or forked copy opens its own client.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Dict, List, Optional, Union
from urllib.parse import quote

import redis

from rqconc.connection.clients import connect, describe
from rqconc.connection.direct import DirectConnection
from rqconc.queue.keys import KeySpace
from rqconc.queue.steps import Steps

log = logging.getLogger("rqconc.worker")


def url_of(client: redis.Redis) -> str:
    """A URL reaching the same server as `client`, for processes that cannot inherit it.
    (TLS certificate options are not carried over: pass a URL for those.)"""
    kwargs = client.connection_pool.connection_kwargs
    user, password = kwargs.get("username"), kwargs.get("password")
    auth = ""
    if password:
        auth = f"{quote(user or '', safe='')}:{quote(password, safe='')}@"
    if kwargs.get("path"):
        query = f"db={kwargs.get('db', 0)}" + (
            f"&password={quote(password, safe='')}" if password else ""
        )
        return f"unix://{kwargs['path']}?{query}"
    scheme = (
        "rediss"
        if issubclass(client.connection_pool.connection_class, redis.SSLConnection)
        else "redis"
    )
    return (
        f"{scheme}://{auth}{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
        f"/{kwargs.get('db', 0)}"
    )


class ChildState:
    """What one child owns alone: its connection's steps, and the claims whose take (or
    completion that also took) may have leased a job although its reply was lost. Per child,
    never shared: another child must not requeue (or pop) a claim it does not own."""

    __slots__ = ("steps", "pid", "orphans")

    def __init__(self, steps: Steps, pid: int) -> None:
        self.steps = steps
        self.pid = pid
        self.orphans: List[str] = []


class Connections:
    """The clients of one worker: `client`/`steps` for the supervisor and rare calls,
    `child()` for the calling child's own connection and state."""

    def __init__(self, url: Union[str, redis.Redis, None], keys: KeySpace) -> None:
        self._client: Optional[redis.Redis] = None
        self._client_pid = 0
        self._steps: Optional[Steps] = None
        if isinstance(url, redis.Redis):  # used as is here; other processes get its URL
            self._client, self._client_pid = url, os.getpid()
            url = url_of(url)
        self.url = url
        self.keys = keys
        # Thread-local: greenlet-local under gevent, whose patching replaces it.
        self._local = threading.local()

    def __getstate__(self) -> Dict[str, Any]:
        # No socket crosses a process boundary: each process opens its own client.
        state = self.__dict__.copy()
        state["_client"], state["_client_pid"], state["_steps"] = None, 0, None
        del state["_local"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    @property
    def connected(self) -> bool:
        """Whether this process has opened its client yet."""
        return self._client is not None and self._client_pid == os.getpid()

    @property
    def client(self) -> redis.Redis:
        if self._client is None or self._client_pid != os.getpid():
            self._client = connect(self.url)
            self._client_pid = os.getpid()
        return self._client

    @property
    def steps(self) -> Steps:
        client = self.client
        if self._steps is None or self._steps.client is not client:
            self._steps = Steps(client, self.keys)
        return self._steps

    def child(self) -> ChildState:
        """The calling child's state, made on first use in each thread, greenlet or process."""
        state: Optional[ChildState] = getattr(self._local, "state", None)
        if state is None or state.pid != os.getpid():
            steps = Steps(DirectConnection(self.client), self.keys)  # type: ignore[arg-type]
            state = self._local.state = ChildState(steps, os.getpid())
        return state

    def child_started(self) -> None:
        if self._client_pid != os.getpid():  # forked: drop the parent's client
            self._client, self._client_pid, self._steps = None, 0, None
        self._local.state = None  # a thread or greenlet of the supervisor's process: its own

    def child_stopping(self) -> None:
        state: Optional[ChildState] = getattr(self._local, "state", None)
        if state is not None:
            state.steps.client.close()
            self._local.state = None

    def redis_down(self, exc: Exception, doing: str, delay: Optional[float] = None) -> None:
        retry = f"; retrying in {delay:.1f} s" if delay is not None else ""
        where = describe(self._client) if self._client is not None else "Redis"
        log.warning(
            "cannot reach Redis at %s while %s (%s)%s", where, doing, exc.__class__.__name__, retry
        )

    def describe(self) -> str:
        return describe(self.client)
