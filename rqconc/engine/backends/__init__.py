"""Backend name → pool class: the one place a backend is resolved (SPEC 2). Each pool's
module is imported on first use, so `threading` never pulls in gevent."""

from __future__ import annotations

import importlib
from typing import Any, Dict, Tuple, Type

from rqconc.engine.pool import Pool

BACKENDS: Dict[str, Tuple[str, str]] = {
    "forking": ("rqconc.engine.backends.forking", "ForkingPool"),
    "multiprocessing": ("rqconc.engine.backends.multiproc", "MultiprocessingPool"),
    "threading": ("rqconc.engine.backends.threads", "ThreadPool"),
    "gevent": ("rqconc.engine.backends.greenlets", "GreenletPool"),
    "asyncio": ("rqconc.engine.backends.asyncio_loop", "AsyncioPool"),
}


def backend_names() -> Tuple[str, ...]:
    return tuple(BACKENDS)


def backend_name(name: Any) -> str:
    """`name` if it names a backend; ValueError naming the valid ones otherwise."""
    if not isinstance(name, str) or name not in BACKENDS:
        valid = ", ".join(repr(n) for n in BACKENDS)
        raise ValueError(f"backend {name!r} is not one of {valid}")
    return name


def pool_class(backend: Any) -> Type[Pool]:
    """The pool class of a backend name, or `backend` itself when it is a pool class;
    ValueError naming the valid names otherwise."""
    if isinstance(backend, type) and issubclass(backend, Pool):
        return backend
    module_name, class_name = BACKENDS[backend_name(backend)]
    return getattr(importlib.import_module(module_name), class_name)
