"""The Lua steps of rqconc/store/lua/ as built (rqconc/store/build), loaded once per process
and called as functions of the steps' library (Redis 7.0+, store/functions.py) or by SHA,
and the replies they give.

Only rqconc/store/steps/core.py calls them (a test holds this): it knows each script's keys and
arguments. The reply enums name the return codes of each script's header; they are
`IntEnum`s, so a reply compares equal to the code in the header.
"""

from __future__ import annotations

import hashlib
import time
from enum import IntEnum
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import redis

from rqconc.connection.replicas import ReplicaWait
from rqconc.store import functions
from rqconc.store.build import build


def now_ms() -> int:
    return int(time.time() * 1000)


def text(value: Any) -> str:
    """A reply as str, whatever the client's decode_responses (bytes that are not UTF-8,
    which only a corrupt write can store, are shown with replacement characters)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


# The job fields a take returns, in the order of TAKE_FIELDS in lua/include/take.lua: the
# fields every job may have, then those only callbacks, chords and jobs with a ttl have.
TAKE_FIELDS = (
    "func",
    "args",
    "kwargs",
    "serializer",
    "timeout",
    "queue",
    "attempts",
    "retry",
    "event_detail",  # read for the take's own `started` event (detail_of, include/events.lua)
    "callback_of",
    "callback_kind",
    "parent_serializer",
    "parent_result",
    "parent_exc",
    "chord_results",  # a chord callback fired by an older rqconc: its group's results
    "expires_at",  # a job with a ttl: the take expires it past then (lua/include/limits.lua)
    "chord_of",  # a chord callback's group, whose hash keeps the results (include/groups.lua)
    "soft_timeout",  # SPEC 18: JobSoftTimeout raised inside the job after these seconds
)

# A job enqueued without any of these fields is stored `lean` ("1", steps.enqueue): the hot
# steps then do not ask for the fields only such jobs have (lua/include/take.lua's and
# complete.lua's second HMGET; a test holds these to them). No step adds one of them to an
# existing job, except a flow stage's links, and complete.lua drops `lean` then. A job
# without the mark (stored by an older producer, or by any other step) is read in full.
LEAN_SPOILERS = frozenset(
    (
        "callback_of",
        "callback_kind",
        "parent_serializer",
        "parent_result",
        "parent_exc",
        "chord_results",
        "chord_of",
        "expires_at",
        "flow_id",
        "on_success_jobs",
        "group_id",
        "group_index",
        "unique_key",
        "unique_for",
        "soft_timeout",
    )
)


def taken(reply: Any) -> Any:
    """A take's reply as (id, fields present), or, when nothing waits, the delay (ms, by
    Redis' clock) until the earliest scheduled job is due (-1: none scheduled). A lean job's
    reply stops before the fields it cannot have (include/take.lua): they are absent."""
    if not isinstance(reply, list):
        return int(reply)
    fields = {name: value for name, value in zip(TAKE_FIELDS, reply[1:]) if value is not None}
    return text(reply[0]), fields


class EnqueueReply(IntEnum):
    """enqueue.lua: the first element of its reply."""

    EXISTS = 0  # a job with a caller's id exists already (nothing written)
    STORED = 1
    MISSING_PARENT = 2  # depends_on names a job that does not exist (nothing written)


class EnqueueGroupReply(IntEnum):
    """enqueue_group.lua."""

    STORED = 1
    ALREADY_STORED = 2  # the group exists: this request, sent again after a lost reply


class CompleteReply(IntEnum):
    """complete.lua: the first element of its reply."""

    NEXT_ID_TAKEN = -2  # the next stage's id names a job that exists (nothing written)
    STALE = -1  # the claim no longer holds the job (nothing written)
    RECORDED = 1


class FailReply(IntEnum):
    """fail.lua."""

    STALE = -1  # the claim no longer holds the job (nothing written)
    FAILED = 1  # for good: a dead letter
    RETRYING = 2  # scheduled for a retry


class CancelReply(IntEnum):
    """cancel.lua."""

    MISSING = -1  # no such job
    ENDED = 0  # already ended, or a stale claim
    CANCELED = 1
    STOPPING = 2  # running: its worker was asked to stop it


class PromoteReply(IntEnum):
    """promote.lua."""

    OTHER_QUEUE = -2  # the job belongs to another queue (nothing written)
    MISSING = -1
    NOT_WAITING = 0  # neither scheduled nor deferred (nothing written)
    PROMOTED = 1


class AwaitReply(IntEnum):
    """await.lua: the first element of its reply."""

    MISSING = 0
    PUSHED = 1  # the outcome was pushed already
    PENDING = 2  # not pushed yet: the job's state follows


class ProgressReply(IntEnum):
    """progress.lua."""

    MISSING = -1
    NOT_RUNNING = 0  # the job does not run (any more): nothing written
    STORED = 1


class CronLeaseReply(IntEnum):
    """cron_lease.lua: the first element of its reply."""

    OTHER_LEADS = 0  # (on a release: or nobody leads)
    RENEWED = 1
    TAKEN = 2
    RELEASED = 3


class CronPutReply(IntEnum):
    """cron_put.lua: the first element of its reply."""

    CHANGED = -1  # the entry or its planned jobs changed since they were read: read again
    NOTHING_TO_REMOVE = 0
    DONE = 1


class CronAdvanceReply(IntEnum):
    """cron_advance.lua."""

    UNDONE = 0  # the job this caller created must not run (deleted unless started)
    RECORDED = 1


class CronSkipReply(IntEnum):
    """cron_skip.lua."""

    GONE = -1  # the entry was removed or replaced
    FIRE = 0
    SKIPPED = 1


class Script:
    """One Lua file: its source and SHA1, callable on any client. On Redis 7.0+ it is called
    as the function of its library (FCALL; store/functions.py, which also loads the library
    when a server lacks it); elsewhere by SHA: a server that does not know the
    script yet (first use, or a restart flushed its script cache) answers NOSCRIPT, and the
    script is loaded and the call repeated once."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = build(name)  # rqconc/store/build: includes, prune, cold
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()
        self.function = functions.function_of(name)

    def __call__(self, client: redis.Redis, keys: Sequence[str], args: Sequence[Any]) -> Any:
        if not self.function:
            return self._evalsha(client, keys, args)
        known = functions.path_of(client)  # one lookup a call: every job pays it
        if not functions.tries_functions(client, known):
            return self._evalsha(client, keys, args)
        try:
            reply = client.fcall(self.function, len(keys), *keys, *args)
        except redis.exceptions.ResponseError as exc:
            if not functions.loaded(client, exc, self.name):
                return self._evalsha(client, keys, args)
            reply = client.fcall(self.function, len(keys), *keys, *args)
        if known is None:
            functions.serves(client)
        return reply

    def _evalsha(self, client: Any, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            client.script_load(self.source)
            return client.evalsha(self.sha, len(keys), *keys, *args)

    def command(self, client: Any, keys: Sequence[str], args: Sequence[Any]) -> Tuple[Any, ...]:
        """The call as one command for a pipeline: FCALL once `client` is known to serve the
        library, EVALSHA until then."""
        if self.function and functions.path_of(client) is True:
            return ("FCALL", self.function, len(keys), *keys, *args)
        return ("EVALSHA", self.sha, len(keys), *keys, *args)

    @staticmethod
    def missing(reply: Any) -> bool:
        """Is a pipelined `command`'s reply the error of a server that lacks the script or
        the library (the next plain call loads it)?"""
        return (
            isinstance(reply, redis.exceptions.NoScriptError)
            or functions.is_missing(reply)
            or functions.is_refused(reply)
        )

    async def aload_missing(self, client: Any, reply: Any) -> None:
        """Load on a `redis.asyncio` client what a pipelined `command` was `missing`
        (the library, or the script for EVALSHA), so the same call can be sent again."""
        if isinstance(reply, redis.exceptions.NoScriptError) or not await functions.aloaded(
            client, reply, self.name
        ):
            await client.script_load(self.source)  # refused the library: EVALSHA from now

    async def acall(
        self,
        client: Any,
        keys: Sequence[str],
        args: Sequence[Any],
        wait: Optional[ReplicaWait] = None,
    ) -> Any:
        """The same call on a `redis.asyncio` client (rqconc.aio), FCALL or EVALSHA (with
        their loads) as `__call__`; with `wait`, WAIT follows in the same round trip."""
        if self.function and functions.tries_functions(client):
            command = ("FCALL", self.function, len(keys), *keys, *args)
            try:
                reply = await _asend(client, command, wait)
            except redis.exceptions.ResponseError as exc:
                if not await functions.aloaded(client, exc, self.name):
                    return await self._aevalsha(client, keys, args, wait)
                reply = await _asend(client, command, wait)
            functions.serves(client)
            return reply
        return await self._aevalsha(client, keys, args, wait)

    async def _aevalsha(
        self, client: Any, keys: Sequence[str], args: Sequence[Any], wait: Optional[ReplicaWait]
    ) -> Any:
        command = ("EVALSHA", self.sha, len(keys), *keys, *args)
        try:
            return await _asend(client, command, wait)
        except redis.exceptions.NoScriptError:
            await client.script_load(self.source)
            return await _asend(client, command, wait)


async def _asend(client: Any, command: Tuple[Any, ...], wait: Optional[ReplicaWait]) -> Any:
    if wait is None or wait.replicas == 0:
        return await client.execute_command(*command)
    # One connection for both: WAIT counts what its own connection wrote.
    pipe = client.pipeline(transaction=False)
    pipe.execute_command(*command)
    pipe.execute_command(*wait.command)
    reply, acknowledged = await pipe.execute(raise_on_error=False)
    if isinstance(reply, Exception):
        raise reply
    wait.check(acknowledged)
    return reply


class Step(NamedTuple):
    """One call of a Lua step, built once (steps/ know each script's keys and arguments)
    and run by either transport: `run` on a redis-py client (what `Steps` wraps, replicas'
    WAIT included), `arun` on a `redis.asyncio` one (rqconc.aio). `decode` turns the
    script's reply into what the step returns (its reply enum), the same for both."""

    script: Script
    keys: List[str]
    args: List[Any]
    decode: Callable[[Any], Any]

    def run(self, client: Any) -> Any:
        return self.decode(self.script(client, self.keys, self.args))

    async def arun(self, client: Any, wait: Optional[ReplicaWait] = None) -> Any:
        return self.decode(await self.script.acall(client, self.keys, self.args, wait))

    def command(self, client: Any) -> Tuple[Any, ...]:
        """This call as one command of a pipeline (rqconc.aio's batch): see Script.command,
        Script.missing and Script.aload_missing."""
        return self.script.command(client, self.keys, self.args)


_SCRIPTS: Dict[str, Script] = {}


def script(name: str) -> Script:
    """The script `name`, read from the package once per process (read-only afterwards)."""
    if name not in _SCRIPTS:
        _SCRIPTS[name] = Script(name)
    return _SCRIPTS[name]


def prepare(names: Iterable[str]) -> None:
    """Build these steps now: a supervisor does, before it forks its children, so that each
    child inherits them built (each costs 5-8 ms to build, and the libraries' name prefix
    5 ms more: a child building its own would start its first job, and record it, that much
    later)."""
    for name in names:
        script(name)
