"""What a queue writes for a call: the hash fields of its jobs, validated and serialized
before any Redis step (bad input raises here). The fields a batch shares (`common`) are
sent once; each job's own are its id, function and arguments. A field equal to its default
is left out (rqconc/queue/job.py reads a missing one as that default).
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Dict, List, Optional, Sequence, Tuple

from rqconc.queue.options import Call, Func, common_fields, job_id_of, with_defaults
from rqconc.queue.placement import check_options
from rqconc.queue.running import in_a_job
from rqconc.queue.serialization import check_defined, check_utf8, dump_arguments, function_name
from rqconc.store.scripts import now_ms

Prepared = Tuple[str, int, Dict[str, str]]

# Option values whose common fields are remembered (`JobFields.common`): immutable, and
# compared by value. The type is part of the key: True and 1 are not the same option.
_SCALARS = frozenset((int, float, str, bool, type(None)))
_REMEMBERED = 256  # distinct option sets per queue; then forgotten all at once
_NO_FUNCTION = object()  # own_many's "no function named yet" (None is a bad func, refused)


def describe_call(name: str, args: Sequence[Any], kwargs: Dict[str, Any]) -> str:
    """The description of a job enqueued without one: its call, cut at 200 characters."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    call = f"{name}({', '.join(parts)})"
    return call if len(call) <= 200 else call[:197] + "..."


def description_of(fields: Dict[str, str]) -> Optional[str]:
    """A job's description: as given at enqueue, else its call (None if unreadable). A
    pickled call is never unpickled for it: enqueue stored its description."""
    stored = fields.get("description")
    if stored is not None or fields.get("serializer", "json") != "json":
        return stored
    try:
        args = json.loads(fields.get("args") or "[]")
        kwargs = json.loads(fields.get("kwargs") or "{}")
    except ValueError:
        return None
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return None
    return describe_call(fields.get("func") or "?", args, kwargs)


class JobFields:
    """The fields of the jobs of queue `name` (its serializer, defaults and event detail)."""

    def __init__(
        self, name: str, namespace: str, serializer: Any, defaults: Dict[str, Any], detail: str
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.serializer = serializer
        self.defaults = defaults  # options for every job that does not set its own (SPEC 14)
        # "full": its jobs' events also carry the call, the outcome, the host and
        # meta["log_tag"]; stored on each job, where the Lua steps that emit events read it.
        self._detail = {"event_detail": "full"} if detail == "full" else {}
        if self._detail:
            self._detail["origin_host"] = socket.gethostname()
        self._common: Dict[Tuple[Any, ...], Tuple[Dict[str, str], int]] = {}

    def prepare(self, calls: Sequence[Call], options: Dict[str, Any]) -> List[Prepared]:
        """(id, priority, hash fields) per call, writing nothing."""
        check_options(self.namespace, options)
        common, priority = self.common(options)
        common = {"queue": self.name, "created_at": str(now_ms()), **common}
        return [
            (job_id, priority, {**common, **own}) for job_id, own in self.own_many(calls, options)
        ]

    def common(self, options: Dict[str, Any]) -> Tuple[Dict[str, str], int]:
        """The fields every job of one enqueue shares (read-only: callers copy to add), and
        their priority. A loop that enqueues with the same options has them validated once
        (bench/PROFILE.md section 5): option sets of scalar values are remembered."""
        key = _options_key(options)
        if key is None:
            return self._common_fields(options)
        known = self._common.get(key)
        if known is None:
            known = self._common_fields(options)  # raises for bad options: nothing kept
            if len(self._common) >= _REMEMBERED:
                self._common.clear()
            self._common[key] = known
        return known

    def _common_fields(self, options: Dict[str, Any]) -> Tuple[Dict[str, str], int]:
        options = with_defaults(options, self.defaults)
        fields, priority = common_fields(options, self.name, self.serializer.name)
        return {**fields, **self._detail} if self._detail else fields, priority

    def own_many(
        self, calls: Sequence[Call], options: Dict[str, Any]
    ) -> List[Tuple[str, Dict[str, str]]]:
        """`own` of each call. A batch draws its fresh ids' random bytes in one call, and a
        function given again (enqueue_many of one function, a thousand times) is named and
        checked once: about 2 us a job of the batch's (bench/PROFILE.md, section 10)."""
        if len(calls) == 1 or options.get("job_id"):
            return [self.own(func, args, kwargs, options) for func, args, kwargs in calls]
        random = os.urandom(16 * len(calls)).hex()  # 128 bits each, as job_id_of's
        owned: List[Tuple[str, Dict[str, str]]] = []
        last: Any = _NO_FUNCTION
        name = ""
        for i, (func, args, kwargs) in enumerate(calls):
            if func is not last:
                name, last = self._name_of(func), func
            owned.append(
                (random[32 * i : 32 * i + 32], self._call_fields(name, args, kwargs, options))
            )
        return owned

    def own(
        self, func: Func, args: Tuple[Any, ...], kwargs: Dict[str, Any], options: Dict[str, Any]
    ) -> Tuple[str, Dict[str, str]]:
        """One job's id and the hash fields of its own call (empty arguments left out)."""
        return job_id_of(options), self._call_fields(self._name_of(func), args, kwargs, options)

    @staticmethod
    def _name_of(func: Func) -> str:
        """The function's "module:qualname", refused when not importable by name or, for a
        name given as text, when its module here does not define it."""
        name = function_name(func)
        if isinstance(func, str):  # a name: does the module here define it?
            check_defined(name, may_import=not in_a_job())
        return name

    def _call_fields(
        self, name: str, args: Tuple[Any, ...], kwargs: Dict[str, Any], options: Dict[str, Any]
    ) -> Dict[str, str]:
        fields = {"func": name}
        if args or kwargs or self.serializer.name != "json":
            args_data, kwargs_data = dump_arguments(self.serializer, args, kwargs)
            if args_data != "[]":
                fields["args"] = args_data
            if kwargs_data != "{}":
                fields["kwargs"] = kwargs_data
        if self.serializer.name != "json" and not options.get("description"):
            # Job.description derives a JSON job's from its call; a pickled call stays opaque.
            description = describe_call(fields["func"], args, kwargs)
            check_utf8(description, "description", description)
            fields["description"] = description
        return fields


def _options_key(options: Dict[str, Any]) -> Optional[Tuple[Any, ...]]:
    """What tells one option set's common fields from another's; None when a value is not a
    scalar (a Retry, meta, a parent job: validated per call). `job_id` is each job's own."""
    key = []
    for name, value in options.items():
        if type(value) not in _SCALARS:
            return None
        if name != "job_id":
            key.append((name, type(value), value))
    return tuple(sorted(key))


__all__ = ["JobFields", "Prepared"]
