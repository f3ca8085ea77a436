"""Redis Functions (7.0+) beside EVALSHA: which path a client's steps take, and the load of
the library that build/library.py makes of each step.

On EVALSHA Redis runs a step's whole text, defining its functions again on every call; a
library is loaded once per server (`FUNCTION LOAD REPLACE`) and an FCALL runs only the
step (bench/PROFILE.md, section 6). Each client (a redis-py client, a worker child's direct
connection, a producer's pooled one) finds its path on its first step:
- FCALL first. "Function not found" (a server that never had this step's library, or that
  a restart or FUNCTION FLUSH emptied) loads that library and calls again, as NOSCRIPT loads a
  script for EVALSHA; a second failure is raised.
- A server without FCALL (6.2), an ACL that refuses FCALL or FUNCTION LOAD, or any other
  refused load (scripting disabled, OOM): the client keeps EVALSHA from then on (a refused
  load is logged once, since it costs every step of that client the per-call set-up).
- A cluster client (redis-py's `RedisCluster`, sync or asyncio): EVALSHA. It routes an
  FCALL by asking a node for the command's keys (COMMAND GETKEYS), a round trip per call.
  The direct connections to a namespace's master (worker children, producers), which carry
  every job's steps, load the libraries on that master and call them.
The pipelined steps (a marker wait with its take) send FCALL only once their client is known
to serve it; until then EVALSHA.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Dict, List, Optional, Set

import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster

from rqconc.connection.cluster import is_cluster
from rqconc.store.build import build_library, library_prefix

log = logging.getLogger(__name__)

FUNCTION_NOT_FOUND = "Function not found"
_PATHS: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
# Steps kept on EVALSHA everywhere: the single enqueue (enqueue_one.lua) has no includes, so
# no closure is made for it on a call, and as a function it cost Redis 4% more (the call's
# set-up: context, state reset, main; bench/PROFILE.md, section 6); a batch (enqueue.lua)
# gained 1% as a function, too little to give a producer's first batch the library's load.
EVALSHA_STEPS = frozenset(("enqueue", "enqueue_one"))
_LIBRARIES: Dict[str, str] = {}  # step -> its library's text, built on its first load
_PREFIX: List[str] = []  # the libraries' name prefix, computed once per process
_WARNED: Set[str] = set()


def prefix() -> str:
    """The prefix of every step's library and function name."""
    if not _PREFIX:
        _PREFIX.append(library_prefix())
    return _PREFIX[0]


def text(step: str) -> str:
    """Step `step`'s library, built on its first load."""
    if step not in _LIBRARIES:
        _LIBRARIES[step] = build_library(step, prefix())
    return _LIBRARIES[step]


def function_of(step: str) -> Optional[str]:
    """The name of step `step`'s library and of its one function; None: EVALSHA only."""
    return None if step in EVALSHA_STEPS else f"{prefix()}_{step}"


def path_of(client: Any) -> Optional[bool]:
    """True: `client` calls the library; False: EVALSHA; None: not known yet."""
    try:
        return _PATHS.get(client)
    except TypeError:  # cannot be referenced weakly: EVALSHA, as before the library
        return False


def tries_functions(client: Any, known: Optional[bool] = None) -> bool:
    """Whether `client` calls the library: as it did (`known`, path_of's answer), else, on
    its first step, unless it is a cluster client. Only a client that served the library is
    known True, so the cluster checks (isinstance of redis-py's Protocol-based classes:
    thousands of instructions a job) run once per client."""
    if known is None:
        known = path_of(client)
    if known is not None:
        return known
    return not (is_cluster(client) or isinstance(client, AsyncRedisCluster))


def serves(client: Any) -> None:
    if _PATHS.get(client) is not True:
        _PATHS[client] = True


def keeps_evalsha(client: Any) -> None:
    try:
        _PATHS[client] = False
    except TypeError:
        pass


def is_missing(reply: Any) -> bool:
    """Is `reply` (an error, raised or returned by a pipeline) one that a load cures?"""
    return isinstance(reply, redis.exceptions.ResponseError) and str(reply) == FUNCTION_NOT_FOUND


def is_refused(reply: Any) -> bool:
    """A server without FCALL (6.2: "unknown command `FCALL`"), or an ACL refusing it."""
    if not isinstance(reply, redis.exceptions.ResponseError):
        return False
    message = str(reply).lower()
    return ("unknown command" in message and "fcall" in message) or (
        isinstance(reply, redis.exceptions.NoPermissionError) and "'fcall'" in message
    )


def loaded(client: Any, error: redis.exceptions.ResponseError, step: str) -> bool:
    """After FCALL of `step` failed with `error`: whether its library is loaded now (call
    again), or False: the client keeps EVALSHA. Any other error is raised."""
    if not _needs_load(client, error):
        return False
    try:
        client.function_load(text(step), replace=True)
    except redis.exceptions.ResponseError as exc:
        return _refused_load(client, exc)
    return True


async def aloaded(client: Any, error: redis.exceptions.ResponseError, step: str) -> bool:
    """`loaded` on a redis.asyncio client."""
    if not _needs_load(client, error):
        return False
    try:
        await client.function_load(text(step), replace=True)
    except redis.exceptions.ResponseError as exc:
        return _refused_load(client, exc)
    return True


def _needs_load(client: Any, error: redis.exceptions.ResponseError) -> bool:
    """Whether FCALL's `error` asks for the library to be loaded; False when the client
    is refused functions (it keeps EVALSHA). Any other error is raised."""
    if is_refused(error):
        keeps_evalsha(client)
        return False
    if not is_missing(error):
        raise error
    return True


def _refused_load(client: Any, exc: redis.exceptions.ResponseError) -> bool:
    keeps_evalsha(client)
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if reason not in _WARNED:
        _WARNED.add(reason)
        log.warning("Redis refused to load the steps as functions (%s): EVALSHA is used", reason)
    return False
