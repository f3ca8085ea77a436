"""User hooks around a worker and its jobs (`--hooks MODULE`, `Supervisor(hooks=[...])`).

A hook is any of these names on an object or a module; every object given may have any of
them:
- `on_worker_start(worker)`, `on_worker_stop(worker)`: once per worker, in the supervisor
  (`worker` is the `Supervisor`);
- `before_job(job)`: before every execution, in the job's own child;
- `after_job(job, result)`: after an execution that returned, once its outcome is recorded;
- `on_failure(job, exc_info)`: after an execution that raised and failed for good;
- `on_retry(job, exc_info, delay)`: after an execution that raised and runs again in
  `delay` seconds. `exc_info` is `(type, exception, traceback)`, as `sys.exc_info()` gives;
- `on_cancel(job)`: after a running job was canceled and its child ended.

Every end of an execution gets its hook (SPEC 16). The ends the supervisor records run
them in the supervisor once the child is gone (end_hooks.py): a timeout (`JobTimeout`) and
a child that died (`WorkerLost`) call `on_failure` / `on_retry`, a canceled running job
`on_cancel`, and a lost lease (its worker vanished) the one of these that fits, in the
worker whose lease recovery found it. A hook that raises is logged with its traceback and
ignored: it never fails the job or the worker. Process backends get a copy of the hooks: a
module is passed by its name and imported again in each child; an object is pickled for
`multiprocessing` (it must be picklable there).
"""

from __future__ import annotations

import importlib
import logging
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

log = logging.getLogger("rqconc.worker.hooks")

HOOK_NAMES = (
    "on_worker_start",
    "on_worker_stop",
    "before_job",
    "after_job",
    "on_failure",
    "on_retry",
    "on_cancel",
)
# The hooks an end of an execution calls, in the child or in the supervisor.
END_HOOKS = ("on_failure", "on_retry", "on_cancel")
RETRYING, STALE = 2, -1  # FailReply codes: recorded as a retry; this run's outcome refused

HookSpec = Union[str, types.ModuleType, Any]


def _loaded(spec: HookSpec) -> Any:
    if isinstance(spec, str):
        try:
            return importlib.import_module(spec)
        except ImportError as exc:
            raise ValueError(f"cannot import the hooks module {spec!r}: {exc}") from None
    return spec


class Hooks:
    """The hooks of one worker, called by name."""

    def __init__(self, specs: Sequence[HookSpec] = ()) -> None:
        if isinstance(specs, (str, types.ModuleType)) or not isinstance(specs, (list, tuple)):
            specs = [specs]
        self._specs = list(specs)
        self._load()

    def _load(self) -> None:
        holders = [_loaded(spec) for spec in self._specs]
        for holder in holders:
            if not any(callable(getattr(holder, name, None)) for name in HOOK_NAMES):
                raise ValueError(
                    f"{getattr(holder, '__name__', holder)!r} has none of the hooks "
                    f"{', '.join(HOOK_NAMES)}"
                )
        self._calls: Dict[str, List[Any]] = {
            name: [getattr(h, name) for h in holders if callable(getattr(h, name, None))]
            for name in HOOK_NAMES
        }
        # Read for every job (job_scope.py): worked out once.
        self.active = any(self._calls.values())

    def __bool__(self) -> bool:
        return self.active

    def __getstate__(self) -> Dict[str, Any]:
        # Modules travel by name (a module cannot be pickled) and are imported again.
        specs = [s.__name__ if isinstance(s, types.ModuleType) else s for s in self._specs]
        return {"specs": specs}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._specs = state["specs"]
        self._load()

    def has(self, name: str) -> bool:
        return bool(self._calls[name])

    def failure_notify(
        self, job_of: Callable[[], Any], exc_info: Any
    ) -> Callable[[int, Optional[float]], None]:
        """What a recorder calls once a failure is recorded, with its FailReply code and
        retry delay: `on_retry` or `on_failure` (none for a refused outcome). `job_of` makes
        the `Job` only when a hook is called."""

        def recorded(code: int, delay: Optional[float]) -> None:
            if code == RETRYING:
                self.call("on_retry", job_of(), exc_info, delay)
            elif code != STALE:
                self.call("on_failure", job_of(), exc_info)

        return recorded

    def call(self, name: str, *args: Any) -> None:
        """Call every hook of this name; one that raises is logged and ignored."""
        for hook in self._calls[name]:
            try:
                hook(*args)
            except Exception:
                log.exception("hook %s (%s) raised; ignored", name, _describe(hook))


def _describe(hook: Any) -> str:
    module = getattr(hook, "__module__", None) or "?"
    return f"{module}.{getattr(hook, '__qualname__', repr(hook))}"
