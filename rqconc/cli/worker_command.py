"""`rqconc worker` and `python main.py BACKEND SIZE`: one worker, two spellings, the same
options (worker.py)."""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence

import click

from rqconc.cli.app import invoke
from rqconc.cli.worker import env_option, run_worker, worker_options
from rqconc.cli.worker_checks import BackendName, check_size

# A typo is refused with the valid names, and shell completion offers them.
BACKEND = BackendName()


@click.command()
@env_option(
    "-b",
    "--backend",
    type=BACKEND,
    default="forking",
    show_default=True,
    help="How the children run.",
)
@env_option(
    "-n",
    "--size",
    type=int,
    default=1,
    show_default=True,
    help="How many children run jobs at once.",
)
@worker_options
def worker(backend: str, size: int, **options: Any) -> None:
    """Run a worker (the same as `python main.py BACKEND SIZE`)."""
    check_size(backend, size)
    sys.exit(run_worker(backend, size, options))


@click.command(name="main.py", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("backend", type=BACKEND)
@click.argument("size", type=int)
@worker_options
def main_py(backend: str, size: int, **options: Any) -> None:
    """python main.py BACKEND SIZE [options]: run a worker."""
    check_size(backend, size)
    sys.exit(run_worker(backend, size, options))


def run_main_py(args: Optional[Sequence[str]] = None) -> None:
    invoke(main_py, args, "main.py")
