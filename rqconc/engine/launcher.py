"""Several workers from one command line: `--processes N` (processes × slots for the
backends whose slots live in one process: `gevent 32 --processes 2` runs 64 greenlets on 2
cores, as Dramatiq's `-p 2 -t 32` runs threads).

The launcher is not a supervisor: it runs N ordinary workers, each the very command it was
started with (a fresh interpreter, so gevent patches before anything is imported), and only
starts, forwards and waits. Each worker is then a whole worker, with every promise of its
backend: its own children, idle/busy table, leases, registry entry and warm/cold shutdown.

Rules:
- Signals: each worker has a process group of its own, so a terminal's Ctrl+C (sent to the
  foreground group) reaches the launcher alone, which passes it on once to every worker: one
  Ctrl+C is one warm shutdown, a second one a cold shutdown, as for a single worker.
  SIGTERM, SIGHUP, SIGTTIN, SIGTTOU, SIGUSR1 and SIGQUIT are passed on the same way.
- Workers never outlive the launcher: each dies with it (PR_SET_PDEATHSIG, Linux), and its
  children with it, so a SIGKILLed launcher's jobs come back through their leases.
- A worker that dies while the launcher runs (a signal, or an exit code other than 0 and 2)
  is started again, within 1 s; one that ends by itself with 0 (`--burst`: its queues are
  empty) or 2 (bad usage: it would only fail again) stays ended. After the first SIGINT or
  SIGTERM none is started again.
- The launcher exits once every worker has ended, with the highest exit code among them
  (128 + N for a worker ended by signal N): 0 after a warm shutdown.
- As PID 1 of a container it also reaps orphans (it waits for any child).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Dict, List, Optional, Sequence

from rqconc.engine import titles
from rqconc.engine.parent_death import die_with_parent
from rqconc.engine.pid1 import FORWARDED  # what a worker reacts to, as PID 1 passes on

# What each worker finds in its environment: "i/N", its place among the launcher's workers
# (it names itself after it, and starts no workers of its own).
PROCESS_MARKER = "RQCONC_PROCESS"
STOPPING = (signal.SIGTERM, signal.SIGINT)
USAGE_ERROR = 2
# How often the launcher looks for ended workers (well within the 1 s of a replacement),
# and how soon a worker that died is started again after its previous start.
POLL = 0.05
RESTART_GAP = 1.0


def launched_place() -> Optional[str]:
    """ "i/N" in a worker the launcher started; None otherwise. Taken out of the environment:
    the worker's children and its jobs' own programs are no launcher's workers."""
    return os.environ.pop(PROCESS_MARKER, None)


def exit_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


class Launcher:
    """`count` copies of `command` (an argv, run with exec), until they have all ended."""

    def __init__(self, command: Sequence[str], count: int) -> None:
        self.command = list(command)
        self.count = count
        self.running: Dict[int, int] = {}  # pid -> place (1..count)
        self.started_at: Dict[int, float] = {}  # place -> when last started
        self.due: Dict[int, float] = {}  # place -> when to start again
        self.codes: List[int] = []
        self.stopping = False

    def run(self) -> int:
        for signum in FORWARDED:
            signal.signal(signum, self._forward)
        for place in range(1, self.count + 1):
            self._start(place)
        _say(
            f"{self.count} workers, pids "
            + ", ".join(str(pid) for pid in self.running)
            + ": signals are passed on to each"
        )
        while self.running or self.due:
            self._reap()
            self._start_due()
            time.sleep(POLL)
        return max(self.codes, default=0)

    def _start(self, place: int) -> None:
        environment = dict(os.environ, **{PROCESS_MARKER: f"{place}/{self.count}"})
        launcher = os.getpid()
        # Race: a stop signal handled between the fork and the new pid's entry in `running`
        # would be passed on to every worker but this one, which would then run on (and the
        # launcher wait for it) for ever. Held back until the pid is in, it reaches it too.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
        if self.stopping:  # stopped before this start: none is started any more
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            return
        pid = os.fork()
        if pid == 0:  # the worker: nothing of the launcher's runs here past exec
            try:
                # Its own group: a terminal's Ctrl+C reaches the launcher alone (see above).
                os.setpgid(0, 0)
                for signum in FORWARDED:
                    signal.signal(signum, signal.SIG_DFL)
                die_with_parent(launcher)
                signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a mask survives exec
                os.execve(sys.executable, self.command, environment)
            finally:
                os._exit(127)  # exec failed
        self.running[pid] = place
        self.started_at[place] = time.monotonic()
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        titles.show_launcher(sorted(self.running))

    def _forward(self, signum: int, _frame: object) -> None:
        if signum in STOPPING:
            self.stopping = True
            self.due.clear()
        for pid in list(self.running):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:  # ended meanwhile: reaped below
                pass

    def _reap(self) -> None:
        while True:
            # Race: a signal passed on between the wait and the pop would go to a pid already
            # reaped, which the system may have given to another process meanwhile.
            held = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid, status = 0, 0
            place = self.running.pop(pid, None) if pid else None
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            if pid == 0:
                return
            if place is None:  # an orphan we adopted as PID 1
                continue
            code = exit_code(status)
            if self.stopping or code in (0, USAGE_ERROR):
                self.codes.append(code)
                continue
            _say(f"worker {place} (pid {pid}) ended with code {code}; starting it again")
            self.due[place] = self.started_at[place] + RESTART_GAP

    def _start_due(self) -> None:
        now = time.monotonic()
        for place, when in list(self.due.items()):
            # A stop signal may clear `due` between any two lines here (_start checks too).
            if when <= now and self.due.pop(place, None) is not None:
                self._start(place)


def _say(message: str) -> None:
    print(f"rqconc: {message}", file=sys.stderr, flush=True)


def launch(command: Sequence[str], count: int) -> int:
    """Run `count` workers of `command` (see the module's doc); their highest exit code."""
    return Launcher(command, count).run()
