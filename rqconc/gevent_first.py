"""What a worker entry point decides before anything else is imported: gevent must patch the
standard library before anything imports it, and as PID 1 an in-process worker splits below
a reaping init (pid1.py). This module imports nothing but `os` and `sys` so that entry
points can decide first thing."""

from __future__ import annotations

import os
import sys
from typing import Optional, Sequence


def backend_named(argv: Sequence[str], positional: bool) -> Optional[str]:
    """The backend a worker command line names: the first argument of `main.py BACKEND SIZE`
    (`positional`), else `-b NAME`, `--backend NAME`, `--backend=NAME` or `-bNAME`, else
    the RQCONC_BACKEND environment variable (as the click option reads it)."""
    args = list(argv)
    if positional:
        return args[0] if args else None
    for i, arg in enumerate(args):
        if arg in ("-b", "--backend") and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--backend="):
            return arg.partition("=")[2]
        if arg.startswith("-b") and len(arg) > 2 and not arg.startswith("--"):
            return arg[2:]
    return os.environ.get("RQCONC_BACKEND") or None


def prepare_worker_process(argv: Sequence[str], positional: bool) -> None:
    """Split below an init when PID 1 (threading, gevent), then patch for gevent."""
    from rqconc.engine.pid1 import split_if_pid1

    backend = backend_named(argv, positional)
    split_if_pid1(backend)
    # By name, not by GreenletPool.is_green: gevent must patch before anything imports the
    # standard library's threading and socket, and the pool classes import both.
    if backend == "gevent":
        from gevent import monkey

        monkey.patch_all()


def console_main() -> None:
    """The `rqconc` console script, and `python -m rqconc`."""
    if sys.argv[1:2] == ["worker"]:
        prepare_worker_process(sys.argv[2:], positional=False)
    from rqconc.cli.app import main

    main()
