"""gevent must patch the standard library before anything imports it; this module imports
nothing but `sys` so that entry points can decide first thing."""
from __future__ import annotations

import sys
from typing import Sequence


def wants_gevent(argv: Sequence[str]) -> bool:
    """Whether a command line asks for the gevent backend (`gevent` positional, `-b gevent`,
    `--backend gevent`, `--backend=gevent`, `-bgevent`)."""
    args = list(argv)
    for i, arg in enumerate(args):
        if arg in ("-b", "--backend") and i + 1 < len(args) and args[i + 1] == "gevent":
            return True
        if arg in ("--backend=gevent", "-bgevent"):
            return True
    return len(args) > 0 and args[0] == "gevent"


def patch_if_gevent(argv: Sequence[str]) -> None:
    if wants_gevent(argv):
        from gevent import monkey

        monkey.patch_all()


def console_main() -> None:
    """The `rqconc` console script."""
    if sys.argv[1:2] == ["worker"]:
        from rqconc.pid1 import backend_named, split_if_pid1

        split_if_pid1(backend_named(sys.argv[2:], positional=False))
    patch_if_gevent(sys.argv[2:] if sys.argv[1:2] == ["worker"] else [])
    from rqconc.cli import main

    main()
