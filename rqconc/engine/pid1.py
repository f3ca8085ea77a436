"""PID 1 of a container, for the backends that run jobs inside the supervisor process.

A process that is PID 1 inherits every orphan of its namespace (a job's `cmd &`, a double
fork) and must reap them, or they stay zombies. The `forking` and `multiprocessing`
supervisors do it themselves (engine/process_pool.py). With `threading`, `gevent` and
`asyncio` the jobs' own `subprocess` children are children of the supervisor too, and
reaping "any child" would steal their exit statuses; so there rqconc splits itself in two,
like `tini`: this process stays PID 1, only reaps and passes signals on, and the worker runs
as its child.

This runs before gevent patches anything (nothing is imported but the standard library's
`os` and `signal`), so the worker child starts as a fresh process would.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Optional

# By name, not by the pool classes' capabilities: this runs before gevent patches the
# standard library, and importing a pool class would import `threading` first.
IN_PROCESS_BACKENDS = ("threading", "gevent", "asyncio")
# What the worker reacts to (docs/operations.md): each one reaches it once, from here.
FORWARDED = (
    signal.SIGTERM,
    signal.SIGINT,
    signal.SIGHUP,
    signal.SIGTTIN,
    signal.SIGTTOU,
    signal.SIGUSR1,
    signal.SIGQUIT,
)


def split_if_pid1(backend: Optional[str]) -> None:
    """As PID 1 with an in-process backend: fork; the child returns and runs the worker,
    this process never returns (it exits with the worker's exit code)."""
    if os.getpid() != 1 or backend not in IN_PROCESS_BACKENDS:
        return
    worker = os.fork()
    if worker == 0:
        # Its own process group: a terminal's Ctrl+C reaches the foreground group, PID 1
        # alone, which passes it on once (in one group the worker would get it twice).
        os.setpgid(0, 0)
        return
    for signum in FORWARDED:
        signal.signal(signum, lambda received, _frame: os.kill(worker, received))
    print(
        f"rqconc: PID 1 of its namespace: the {backend} worker runs as pid {worker}; "
        "this process reaps orphans and passes signals on",
        file=sys.stderr,
        flush=True,
    )
    while True:
        pid, status = os.wait()  # every process that ends here: orphans and the worker
        if pid == worker:
            os._exit(
                os.waitstatus_to_exitcode(status)
                if os.WIFEXITED(status)
                else 128 + os.WTERMSIG(status)
            )
