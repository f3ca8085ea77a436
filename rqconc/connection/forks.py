"""How many times this process was forked into the one asking: a connection made before a
fork belongs to the parent, and a child must make its own. Comparing this count with the one
a connection was made at replaces `os.getpid()`, a system call, on every enqueue and every
job's steps (bench/PROFILE.md, sections 8 and 10).

Counted by `os.register_at_fork`, which runs for `os.fork()` and multiprocessing's fork
start method; a process made by `spawn` starts at 0 with nothing inherited."""

from __future__ import annotations

import os

_COUNT = [0]


def _forked() -> None:
    _COUNT[0] += 1


os.register_at_fork(after_in_child=_forked)


def fork_count() -> int:
    """The forks between the first import of this module and the calling process."""
    return _COUNT[0]
