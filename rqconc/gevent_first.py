"""What a worker entry point decides before anything else is imported: gevent must patch the
standard library before anything imports it, and as PID 1 an in-process worker splits below
a reaping init (pid1.py). This module imports nothing but `os` and `sys` so that entry
points can decide first thing."""

from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence


def backend_named(argv: Sequence[str], positional: bool) -> Optional[str]:
    """The backend a worker command line names: the first argument of `main.py BACKEND SIZE`
    (`positional`), else `-b NAME`, `--backend NAME`, `--backend=NAME` or `-bNAME`, else
    the RQCONC_BACKEND environment variable (as the click option reads it), else the files'
    BACKEND setting (rqconc/cli/settings.py)."""
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
    return os.environ.get("RQCONC_BACKEND") or setting_in_files(args, "BACKEND")


def _option_value(args: Sequence[str], short: str, long: str) -> Optional[str]:
    for i, arg in enumerate(args):
        if arg in (short, long) and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(long + "="):
            return arg.partition("=")[2]
        if arg.startswith(short) and len(arg) > 2 and not arg.startswith("--"):
            return arg[2:]
    return None


def setting_in_files(args: Sequence[str], name: str) -> Optional[str]:
    """Setting NAME of the config file (`-c FILE`, RQCONC_CONFIG), else `name` of the working
    directory's pyproject.toml [tool.rqconc]. Read without running the config module (its
    imports would come before gevent's patching): only a literal (`BACKEND = "gevent"`,
    `PROCESSES = 2`) counts here. A file that cannot be read is left to the command, which
    says why."""
    # Imported here: this module imports only os and sys at load (see the docstring); ast and
    # tomllib import neither threading nor socket.
    import ast

    path = _option_value(args, "-c", "--config") or os.environ.get("RQCONC_CONFIG")
    try:
        if path:
            with open(path, encoding="utf-8") as file:
                tree = ast.parse(file.read())
            for node in tree.body:
                if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in node.targets
                ):
                    return str(ast.literal_eval(node.value))
        if sys.version_info >= (3, 11):
            import tomllib
        else:
            import tomli as tomllib
        with open("pyproject.toml", "rb") as toml:
            table = tomllib.load(toml).get("tool", {}).get("rqconc", {})
        return str(table[name.lower()]) if name.lower() in table else None
    except (OSError, ValueError, SyntaxError, AttributeError, TypeError):
        return None


# The command line that runs this worker again, in a fresh interpreter: what `--processes N`
# starts N of (engine/launcher.py). Set by the entry points; None when embedded.
worker_command: Optional[List[str]] = None


def launches_workers(argv: Sequence[str]) -> bool:
    """Whether this command starts several workers (`--processes N` with N > 1, on the
    command line, in RQCONC_PROCESSES or in the files' PROCESSES setting) rather than being
    one of them. A value that is not a number is left to the command to refuse."""
    # It imports neither threading nor socket, which gevent must patch before any import.
    from rqconc.engine.launcher import PROCESS_MARKER

    if os.environ.get(PROCESS_MARKER):
        return False
    value = _option_value(argv, "--processes", "--processes")
    if value is None:
        value = os.environ.get("RQCONC_PROCESSES") or setting_in_files(argv, "PROCESSES")
    try:
        return value is not None and int(value) > 1
    except ValueError:
        return False


def prepare_worker_process(argv: Sequence[str], positional: bool) -> None:
    """Split below an init when PID 1 (threading, gevent), then patch for gevent; not in a
    launcher of several workers, which runs no job (each worker it starts patches itself)."""
    global worker_command
    from rqconc.engine.pid1 import split_if_pid1

    if positional:
        worker_command = [sys.executable, os.path.abspath(sys.argv[0]), *argv]
    else:
        worker_command = [sys.executable, "-m", "rqconc", "worker", *argv]
    backend = backend_named(argv, positional)
    split_if_pid1(backend)
    # By name, not by GreenletPool.is_green: gevent must patch before anything imports the
    # standard library's threading and socket, and the pool classes import both.
    if backend == "gevent" and not launches_workers(argv):
        from gevent import monkey

        monkey.patch_all()


def console_main() -> None:
    """The `rqconc` console script, and `python -m rqconc`."""
    if sys.argv[1:2] == ["worker"]:
        prepare_worker_process(sys.argv[2:], positional=False)
    from rqconc.cli.app import main

    main()
