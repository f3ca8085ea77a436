"""Backend name → pool class. Imported lazily so `threading` never pulls in gevent."""

from __future__ import annotations

import importlib
from typing import Dict, Tuple, Type

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


def pool_class(name: str) -> Type[Pool]:
    """The pool class of a backend name; ValueError naming the valid ones otherwise."""
    if name not in BACKENDS:
        valid = ", ".join(BACKENDS)
        raise ValueError(f"unknown backend {name!r}: choose one of {valid}")
    module_name, class_name = BACKENDS[name]
    return getattr(importlib.import_module(module_name), class_name)
