"""Process titles, so `ps` tells an operator what each process of a worker does.

    rqconc: supervisor forking 4 [default,high] busy=1 idle=3 name=web1.4242.ab12
    rqconc: supervisor forking 2x50 [default] busy=60 idle=40 name=...  (--slots 50)
    rqconc: child 2 idle
    rqconc: child 3 busy 5f0c...e1
    rqconc: child 1 slots busy=12 idle=38           (--slots 50: jobs run at once)
    rqconc: launcher of 2 workers, pids 4243 4244   (--processes 2)

Only process children get a title of their own: the children of the threading and gevent
backends live inside the supervisor process, whose title carries their busy/idle counts.
A title is written only when its text changes (the supervisor looks every 0.25 s; a busy
process child writes one per job, so that the job id shown is always the one it runs).
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

PREFIX = "rqconc"

_shown: Optional[str] = None
# setproctitle, looked up on first use (not at import: the title of a process that never
# shows one is left alone); children inherit it across fork.
_write: Optional[Callable[[str], None]] = None


def _no_title(title: str) -> None:
    return None


def _load() -> Callable[[str], None]:
    try:
        from setproctitle import setproctitle
    except ImportError:  # an install without it still works, only without titles
        return _no_title
    return setproctitle


def _set(title: str) -> None:
    global _shown, _write
    if title == _shown:
        return
    _shown = title
    if _write is None:
        _write = _load()
    _write(title)


def supervisor_title(
    backend: str,
    size: int,
    queues: Sequence[str],
    busy: int,
    idle: int,
    name: str = "",
    state: str = "running",
    suspended: bool = False,
    slots: int = 1,
) -> str:
    parts = [f"{PREFIX}: supervisor {backend} {size}" + (f"x{slots}" if slots > 1 else "")]
    if queues:
        parts.append(f"[{','.join(queues)}]")
    parts.append(f"busy={busy} idle={idle}")
    if suspended:
        parts.append("suspended")
    if state != "running":
        parts.append(state)
    if name:
        parts.append(f"name={name}")
    return " ".join(parts)


def child_title(index: int, item_id: Optional[str] = None) -> str:
    if item_id:
        return f"{PREFIX}: child {index} busy {item_id}"
    return f"{PREFIX}: child {index} idle"


def slots_title(index: int, busy: int, slots: int) -> str:
    return f"{PREFIX}: child {index} slots busy={busy} idle={slots - busy}"


def launcher_title(pids: Sequence[int]) -> str:
    return f"{PREFIX}: launcher of {len(pids)} workers, pids {' '.join(map(str, pids))}"


def show_launcher(pids: Sequence[int]) -> None:
    """The title of a `--processes N` launcher (engine/launcher.py): its workers' pids."""
    _set(launcher_title(pids))


def show_slots(index: int, busy: int, slots: int) -> None:
    """The title of a process child with several slots (written by its host thread)."""
    _set(slots_title(index, busy, slots))


def show_supervisor(
    backend: str,
    size: int,
    queues: Sequence[str],
    busy: int,
    idle: int,
    name: str = "",
    state: str = "running",
    suspended: bool = False,
    slots: int = 1,
) -> None:
    _set(supervisor_title(backend, size, queues, busy, idle, name, state, suspended, slots))


def show_child(index: int, item_id: Optional[str] = None) -> None:
    """Call only in a child that is a process of its own (a thread would retitle its
    supervisor)."""
    _set(child_title(index, item_id))
