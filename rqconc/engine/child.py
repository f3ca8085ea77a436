"""What every child does, whatever runs it: wait for an item (idle), perform it (busy), repeat.

The same loop runs in a forked process, a multiprocessing process, a thread or a greenlet;
the backend only decides how it is started and how it can be ended.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Tuple

from rqconc.engine import titles
from rqconc.engine.event_loops import Interrupted
from rqconc.engine.parent_death import die_with_parent
from rqconc.engine.slots.table import CellTable
from rqconc.engine.source import StopWorker, WorkItem, WorkSource

log = logging.getLogger("rqconc.engine.child")

BOOT_FAILURE_EXIT = 3


@dataclass
class ChildContext:
    """Everything a child needs; picklable for the multiprocessing backend."""

    index: int
    generation: int
    table: CellTable  # the idle/busy table: one cell per child, or per slot thread
    source: WorkSource
    uid: str
    supervisor_pid: int
    take_timeout: float = 0.25
    max_jobs: Optional[int] = None
    preload: Sequence[str] = field(default_factory=tuple)
    # The child is an OS process of its own (forking, multiprocessing): it must notice when
    # it is orphaned, and it has a process title of its own.
    is_os_process: bool = False
    # `--slots K`: the child runs K jobs at once, one thread per slot (slots/host.py). Its
    # slots are the table's cells index * K ... index * K + K - 1, of these generations.
    slots_per_child: int = 1
    generations: Tuple[int, ...] = ()

    @property
    def first_cell(self) -> int:
        return self.index * self.slots_per_child


def boot_child(ctx: ChildContext) -> bool:
    """Preload and the source's set-up, once per child; False (reported in the child's first
    slot) when that fails."""
    try:
        for entry in ctx.preload:  # "module", or "module:function" to call once imported
            module, _, function = entry.partition(":")
            loaded = importlib.import_module(module)
            if function:
                getattr(loaded, function)()
        ctx.source.child_started(ctx.index)
    except Exception as exc:  # any failure to start is a boot error, reported by the slot
        message = f"{exc.__class__.__name__}: {exc}"
        generation = ctx.generations[0] if ctx.generations else ctx.generation
        ctx.table.boot_failed(ctx.first_cell, generation, message)
        log.debug("child %d failed to start:\n%s", ctx.index, traceback.format_exc())
        return False
    return True


def run_child(ctx: ChildContext) -> int:
    """The child's whole life; returns its exit code."""
    pid = os.getpid()
    if not boot_child(ctx):
        return BOOT_FAILURE_EXIT
    if not ctx.table.child_ready(ctx.index, ctx.generation, pid):
        return 0
    _show(ctx)
    try:
        _loop(ctx)
    except BaseException:
        ctx.table.child_exiting(ctx.index, ctx.generation)
        raise
    _exit_slot(ctx)
    return 0


def _exit_slot(ctx: ChildContext) -> None:
    """The end of a child that ends normally: what it could not hand back stays in its slot
    for the supervisor (WorkSource.child_stopping)."""
    held = ctx.source.child_stopping()
    ctx.table.child_exiting(ctx.index, ctx.generation, held)


def run_slot(ctx: ChildContext, pid: int) -> None:
    """One slot's life inside a child that runs several (slots/host.py): the same loop as a
    child of its own, in the cell `ctx.index` of generation `ctx.generation`."""
    if not ctx.table.child_ready(ctx.index, ctx.generation, pid):
        return
    try:
        _loop(ctx)
    except BaseException:
        ctx.table.child_exiting(ctx.index, ctx.generation)
        raise
    _exit_slot(ctx)  # this thread's own connection and orphaned claims


def _loop(ctx: ChildContext) -> None:
    table = ctx.table
    done = 0
    while True:
        if ctx.is_os_process and os.getppid() != ctx.supervisor_pid:
            return  # orphaned: the supervisor is gone, take nothing more
        claim = table.begin_take(ctx.index, ctx.generation, ctx.uid)
        if claim is None:
            return
        if claim == "":  # paused (suspended): look again shortly
            _show(ctx)
            time.sleep(min(ctx.take_timeout, 0.1))
            continue
        item = ctx.source.take(claim, ctx.take_timeout)
        if item is None:
            # Idle for a whole take by now: only an idleness that lasts is worth a title
            # (a child between two items would write two titles per item).
            _show(ctx)
            continue
        if table.paused():  # paused while this take was waiting: the item is not ours to run
            ctx.source.give_back(item)
            continue
        if not table.mark_busy(ctx.index, ctx.generation, item.item_id, item.deadline):
            ctx.source.give_back(item)
            return
        done, carry_on = _run_chain(ctx, item, done)
        if not carry_on:
            return


def _run_chain(ctx: ChildContext, item: WorkItem, done: int) -> Tuple[int, bool]:
    """Perform items while each completion also takes the next one; (items done, whether
    the child goes on taking)."""
    done, item, _, interrupted = perform_chain(ctx, ctx.source, item, done)
    if interrupted:
        return done, False
    # No idle title here: the next take shows it if nothing comes (see _loop).
    return end_chain(ctx, item, done)


def perform_chain(
    ctx: ChildContext,
    source: WorkSource,
    item: WorkItem,
    done: int,
    hand_over: Optional[Callable[[WorkItem], bool]] = None,
) -> Tuple[int, WorkItem, Optional[WorkItem], bool]:
    """Perform `item`, then each item its completion took, in this thread, until the chain
    ends or takes an item that `hand_over` says runs elsewhere (the native core's `async
    def` items, native_slots.py). Returns (items done, the last item performed, the item
    handed over, marked busy, or None, whether the slot was ended mid-item)."""
    table = ctx.table
    index, generation, uid, max_jobs = ctx.index, ctx.generation, ctx.uid, ctx.max_jobs

    def next_claim() -> Optional[str]:  # asked once the item ran: retiring or paused by now?
        return table.begin_chain(index, generation, uid)

    while True:
        # Per item, not throttled: the id in `ps` must be the one running now, and a long
        # item may follow a short one at any moment.
        _show(ctx, item.item_id)
        try:
            following = source.perform(item, None if is_last(max_jobs, done) else next_claim)
        except Interrupted:  # ended mid-item: the supervisor took the slot and settles it
            return done, item, None, True
        except StopWorker as stop:  # the source settled the item; the supervisor stops us all
            table.request_stop(stop.exit_code, str(stop))
            return done, item, None, False
        done += 1
        if following is None:
            return done, item, None, False
        if not table.chain_busy(
            index, generation, following.item_id, following.deadline, item.outcome
        ):
            source.give_back(following)  # suspended or retiring meanwhile: not ours to run
            return done, item, None, False
        if hand_over is not None and hand_over(following):
            return done, item, following, False
        item = following


def is_last(max_jobs: Optional[int], done: int) -> bool:
    """Whether the next item is the child's last (--max-jobs-per-child): it takes no other."""
    return max_jobs is not None and max_jobs > 0 and done + 1 >= max_jobs


def end_chain(ctx: ChildContext, item: WorkItem, done: int) -> Tuple[int, bool]:
    """BUSY → IDLE after a chain ending with `item` (counted with its outcome): (items done,
    whether the child goes on taking)."""
    if not ctx.table.mark_idle(ctx.index, ctx.generation, item.outcome):
        return done, False
    return done, not (ctx.max_jobs and done >= ctx.max_jobs)


def _show(ctx: ChildContext, item_id: Optional[str] = None) -> None:
    if ctx.is_os_process:  # a thread or greenlet shares its supervisor's title
        titles.show_child(ctx.index, item_id)


def prepare_process_child(supervisor_pid: int) -> None:
    """Signal dispositions and parent-death handling for a child that is a process."""
    # Ctrl+C signals the whole process group, and systemd sends SIGTERM to every process of
    # the unit: only the supervisor decides what they mean (it ends children with SIGKILL).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # These are the supervisor's controls; in a child they would stop it or do nothing useful.
    for signum in (signal.SIGHUP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGUSR1):
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    die_with_parent(supervisor_pid)
