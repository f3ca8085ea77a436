"""One execution of a job's function: the one path the worker (rqconc/worker/runner.py) and
eager mode (rqconc/queue/eager/) share, so that a test of an eager queue sees what a worker
would do. In order: the allow-list (checked before any import), the pickle opt-in, the
arguments decoded from what enqueue stored, a callback's (job, result or error) put first,
the function called (`async def` awaited, calling.py), its result serialized (a value the
serializer cannot carry fails the job), a `Next` made ready, and a failure described by
type name, message and traceback. Nothing here writes anything: the worker records the
`Outcome` in Redis, eager mode in its job's fields.
"""

from __future__ import annotations

import inspect
import json
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from rqconc import errors
from rqconc.connection.backoff import REDIS_DOWN
from rqconc.queue.calling import acall_job_function, call_job_function
from rqconc.queue.retry import failure_names
from rqconc.queue.serialization import (
    get_serializer,
    is_allowed,
    resolve_function,
    split_function_name,
    type_name,
)
from rqconc.queue.workflow.callbacks import callback_arguments
from rqconc.queue.workflow.flows import Next

# (function, args, kwargs), and `soft_timeout=` for a job that has one.
Call = Callable[..., Any]


@dataclass
class Outcome:
    """What running a job produced: a serialized result, or a failure to record."""

    result: Optional[str] = None
    serializer: str = "json"
    exc: Optional[Tuple[str, str, str]] = None  # type name, message, traceback
    # The failure's class hierarchy, for the retry policy; empty: a final failure (a refusal,
    # corrupt data, a result that cannot be stored), which no policy retries.
    exc_mro: Tuple[str, ...] = ()
    # A flow's next stage, as the caller's `next_stage` made it ready (the worker: (id, fields)).
    next_stage: Any = None
    # For the hooks (rqconc/worker/hooks.py): what the function returned or raised.
    value: Any = None
    error: Optional[BaseException] = None


def user_traceback(exc: BaseException) -> str:
    """The traceback of a job's failure from the job's own code on: the frames of rqconc that
    called it (this module, calling.py, the event loop) say nothing to the job's author."""
    frames = exc.__traceback__
    while frames is not None and _is_rqconc(frames.tb_frame.f_globals.get("__name__", "")):
        frames = frames.tb_next
    return "".join(traceback.format_exception(type(exc), exc, frames))


def _is_rqconc(module: str) -> bool:
    return module.startswith("rqconc.") and not module.startswith("rqconc.demo.")


class Refused(Exception):
    """The job cannot even be started (corrupt, not allowed, unimportable): a final failure."""

    def __init__(self, exc_type: str, message: str) -> None:
        super().__init__(message)
        self.exc_type = exc_type


class NotAllowedModule(Refused):
    """The function's module matches none of the allow-list's prefixes: a refusal before
    any import that is a configuration error of whoever runs the job, not a failure of the
    job. Eager mode fails the job with it; a worker gives the job back to its queue for a
    worker that allows it (rqconc/worker/refusals.py). `hint` says what to allow."""

    def __init__(self, func: str, module: str, message: str, hint: str, allowed: str) -> None:
        super().__init__(type_name(errors.NotAllowed), message)
        self.func, self.module, self.hint, self.allowed = func, module, hint, allowed


def _well_formed(module: str, qualname: str) -> bool:
    """Whether a function name is one an allow-list could cover: a name that is not (junk
    written into Redis) is corrupt job data, a final failure, never given back."""
    return all(part.isidentifier() for part in (*module.split("."), *qualname.split(".")))


def _seconds(stored: str) -> Optional[float]:
    """A stored soft timeout; None (no soft timeout, the hard one still holds) when it is
    not a number > 0, which only a write by something other than rqconc can store."""
    try:
        seconds = float(stored)
    except ValueError:
        return None
    return seconds if 0 < seconds < float("inf") else None


def short(value: str, limit: int = 300) -> str:
    """A corrupt value quoted in an error message, cut so that the message stays short."""
    return value if len(value) <= limit else value[: limit - 3] + "..."


def _loads(serializer: Any, data: Optional[str], empty_text: str, empty: type) -> Any:
    """Arguments as stored; most jobs have none, which needs no decoding (and no call of
    this: `prepare` tests for a missing field first)."""
    if data is None or (data == empty_text and serializer.name == "json"):
        return empty()
    return serializer.loads(data)


def _chord_results(serializer: Any, values: Sequence[Any]) -> List[Any]:
    """The group's results, in group order, as serialized values (the group's queue is the
    callback's, so is their serializer); None for a member that has none."""
    try:
        return [serializer.loads(v) if isinstance(v, str) else None for v in values]
    except Exception as exc:
        raise Refused(
            "ValueError", f"corrupt chord data: cannot decode its results: {exc}"
        ) from None


def _copied_chord_results(stored: str) -> List[Any]:
    """The JSON list of results that a chord fired by an older rqconc copied into its
    callback job (`chord_results`); a job fired since reads them from its group."""
    try:
        values = json.loads(stored)
        if not isinstance(values, list):
            raise ValueError("not a list")
        return values
    except Exception as exc:
        raise Refused(
            "ValueError", f"corrupt chord data: cannot decode its results: {exc}"
        ) from None


def _raised(exc: Exception) -> Outcome:
    """The Outcome of an exception the function raised (its own failure)."""
    return Outcome(
        exc=(type_name(type(exc)), str(exc), user_traceback(exc)),
        exc_mro=failure_names(exc),
        error=exc,
    )


class Execution:
    """Resolves and runs jobs; resolved functions are cached per process. What differs
    between a worker and eager mode is given: where a callback's parent job is read
    (`parent_of`), how a returned `Next` is made ready (`next_stage`, which raises TypeError
    or ValueError to refuse it), how the function is called (`call`: eager mode's enforces
    the timeout) and the hint a refusal by the allow-list ends with (`allow_hint`)."""

    def __init__(
        self,
        allow: Sequence[str],
        allow_pickle: bool,
        parent_of: Callable[[str], Any],
        next_stage: Callable[[Next], Any],
        allow_hint: Callable[[str], str] = lambda prefix: f"allow {prefix!r}",
    ) -> None:
        self.allow = list(allow)
        # Unpickling runs code chosen by whoever can write to Redis: a worker opts in.
        self.allow_pickle = allow_pickle
        self.parent_of = parent_of
        self.next_stage = next_stage
        self.allow_hint = allow_hint
        self._functions: Dict[str, Callable[..., Any]] = {}

    def forget_functions(self) -> None:
        """A forked child resolves its own (a parent's cache may hold stale modules)."""
        self._functions = {}

    def allowed_text(self) -> str:
        """The allow-list as the worker's start line and refusals show it."""
        return ", ".join(self.allow) or "none besides rqconc.demo"

    def run(self, fields: Dict[str, str], call: Call = call_job_function) -> Outcome:
        """Run the job these fields describe; every failure is an Outcome, never raised
        (except Redis being down while a callback reads its parent)."""
        try:
            func, args, kwargs, serializer = self.prepare(fields)
        except Refused as refused:
            return Outcome(exc=(refused.exc_type, str(refused), ""))
        soft = fields.get("soft_timeout")  # SPEC 18; most jobs have none
        try:
            if soft is None:
                result = call(func, args, kwargs)
            else:
                result = call(func, args, kwargs, soft_timeout=_seconds(soft))
        except Exception as exc:  # the job's own failure; BaseException ends the child
            return _raised(exc)
        return self._returned(result, serializer)

    async def arun(self, fields: Dict[str, str]) -> Outcome:
        """As `run`, for an `async def` function awaited in the caller's own event loop
        (the asyncio backend's native core); a cancel of the caller's task goes through."""
        try:
            func, args, kwargs, serializer = self.prepare(fields)
        except Refused as refused:
            return Outcome(exc=(refused.exc_type, str(refused), ""))
        soft = fields.get("soft_timeout")  # SPEC 18; most jobs have none
        try:
            seconds = None if soft is None else _seconds(soft)
            result = await acall_job_function(func, args, kwargs, seconds)
        except Exception as exc:  # the job's own failure; BaseException ends the slot
            return _raised(exc)
        return self._returned(result, serializer)

    def _returned(self, result: Any, serializer: Any) -> Outcome:
        """The Outcome of a value the function returned: serialized, a `Next` made ready."""
        returned = result
        try:
            next_stage = None
            if isinstance(result, Next):
                next_stage = self.next_stage(result)
                result = result.result
            return Outcome(
                result=serializer.dumps(result, "return value"),
                serializer=serializer.name,
                next_stage=next_stage,
                value=returned,
            )
        except (TypeError, ValueError) as exc:  # deterministic: a retry would fail the same
            return Outcome(exc=(type(exc).__name__, str(exc), traceback.format_exc()))

    def is_coroutine_function(self, name: str) -> bool:
        """Whether the job function `name` is allowed, importable and `async def` (False
        for anything else, whose run says what is wrong)."""
        func = self._functions.get(name)
        if func is None:
            try:
                func = self._allowed_function(name)
            except Exception:  # refused or not importable: the ordinary run reports it
                return False
        return inspect.iscoroutinefunction(func)

    def prepare(self, fields: Dict[str, str]) -> Tuple[Callable[..., Any], list, dict, Any]:
        """(function, args, kwargs, serializer) as the call will get them; `Refused` else."""
        name = fields.get("func", "")
        # Cached only once allowed and imported: a hit needs no check again.
        func = self._functions.get(name) or self._allowed_function(name)
        serializer_name = fields.get("serializer", "json")
        self._check_serializer(serializer_name, "job of", name)
        try:
            serializer = get_serializer(serializer_name)
            stored_args, stored_kwargs = fields.get("args"), fields.get("kwargs")
            args = [] if stored_args is None else _loads(serializer, stored_args, "[]", list)
            kwargs = {} if stored_kwargs is None else _loads(serializer, stored_kwargs, "{}", dict)
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise ValueError("arguments are not a list and a dict")
        except Exception as exc:
            raise Refused(
                "ValueError", f"corrupt job data: cannot decode the arguments of {name}: {exc}"
            ) from None
        if fields.get("callback_of"):  # a callback or webhook: (job, result or error) first
            args = [*self._callback_arguments(fields), *args]
        if "chord_results" in fields:  # a chord's callback fired by an older rqconc
            results = _chord_results(serializer, _copied_chord_results(fields["chord_results"]))
            args = [results, *args]
        elif fields.get("chord_of"):  # a chord's callback: its group's results first
            args = [_chord_results(serializer, self._kept_results(fields["chord_of"])), *args]
        return func, args, kwargs, serializer

    def _kept_results(self, group_id: str) -> List[Optional[str]]:
        try:
            kept = self.group_results(group_id)
        except REDIS_DOWN:
            raise
        except Exception as exc:
            raise Refused(
                "ValueError",
                f"corrupt chord data: cannot read the results of group {group_id}: {exc}",
            ) from None
        if kept is None:
            raise Refused(
                "ValueError",
                f"the results of group {group_id} are not kept: its chord was not fired "
                "by its last job (promoted early?), or the group's record is gone",
            )
        return kept

    def group_results(self, group_id: str) -> Optional[List[Optional[str]]]:
        """The serialized results of a fired chord's group, in group order, read where the
        step firing it kept them (the worker's JobRunner: the group's hash in Redis); None
        if they are not kept. Eager mode calls a chord with its results directly."""
        return None

    def not_allowed(self, name: str) -> Optional[NotAllowedModule]:
        """The refusal of a job whose function's module the allow-list does not cover, or
        None (allowed, or a name so corrupt that `run` fails the job for it)."""
        if name in self._functions:
            return None
        try:
            module, qualname = split_function_name(name, self.allow)
        except ValueError:
            return None
        if is_allowed(module, self.allow) or not _well_formed(module, qualname):
            return None
        return self._refusal(name, module)

    def _refusal(self, name: str, module: str) -> NotAllowedModule:
        hint, allowed = self.allow_hint(module.split(".")[0]), self.allowed_text()
        message = (
            f"function {name} is not allowed on this worker: module {module!r} "
            f"matches none of its allowed prefixes ({allowed}); {hint} to run it"
        )
        return NotAllowedModule(name, module, message, hint, allowed)

    def _allowed_function(self, name: str) -> Callable[..., Any]:
        """The function a job names, checked against the allow-list before any import."""
        try:
            module, qualname = split_function_name(name, self.allow)
        except ValueError as exc:
            raise Refused("ValueError", f"corrupt job data: {exc}") from None
        if not is_allowed(module, self.allow):
            if not _well_formed(module, qualname):  # no allow-list could make it run
                raise Refused(
                    "ValueError",
                    f"corrupt job data: {short(name)!r} is not a function name "
                    "(module:qualname, each a dotted path of Python identifiers)",
                )
            raise self._refusal(name, module)
        try:
            func = resolve_function(name, self.allow)
        except errors.NotAllowed as exc:  # imported, but names a function from elsewhere
            raise Refused(type_name(errors.NotAllowed), str(exc)) from None
        except Exception as exc:
            raise Refused(
                type_name(type(exc)), f"cannot import {short(name)}: {short(str(exc))}"
            ) from None
        self._functions[name] = func
        return func

    def _check_serializer(self, name: str, what: str, subject: str) -> None:
        """Refuse a pickled payload unless allowed; the message (`what` `subject`, cut) is
        made only then: every job asks."""
        if name == "pickle" and not self.allow_pickle:
            raise Refused(
                type_name(errors.NotAllowed),
                f"the {what} {short(subject)} carries a pickled payload, which this worker "
                "does not accept (unpickling runs code chosen by whoever can write to Redis); "
                "start the worker with --allow-pickle (Supervisor(allow_pickle=True)) if your "
                "Redis is trusted",
            )

    def _callback_arguments(self, fields: Dict[str, str]) -> Tuple[Any, Any]:
        parent_id = fields["callback_of"]
        self._check_serializer(fields.get("parent_serializer", "json"), "result of job", parent_id)
        try:
            # The parent may be gone already (result_ttl=0): the job then has its id only.
            return callback_arguments(fields, self.parent_of(parent_id))
        except REDIS_DOWN:
            raise
        except Exception as exc:
            raise Refused(
                "ValueError", f"corrupt callback data for job {parent_id}: {exc}"
            ) from None


__all__ = ["Execution", "NotAllowedModule", "Outcome", "Refused", "short"]
