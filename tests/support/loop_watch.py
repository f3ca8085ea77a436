"""Why an event loop's callback was slow: each callback of the loop's thread is measured
(wall time, the thread's own CPU time, the time of garbage collections run inside it, and
the thread's voluntary and involuntary context switches, RUSAGE_THREAD), so that a slow
callback that asyncio's debug mode logs can be told apart:

- `waited`: the thread waited in the kernel inside it (a voluntary context switch: a
  blocking socket, file or lock call): what "never blocks the event loop" forbids;
- `preempted`: it used less CPU than the threshold and never waited: the OS ran other
  processes meanwhile (a loaded machine), nothing the code did;
- `collected`: a full garbage collection (generation 2) ran inside it and, without it, the
  callback used less CPU than the threshold: the interpreter's pass over the whole heap of
  the process (pytest's included), whichever callback happened to allocate;
- `computed`: it used the threshold's worth of CPU itself.

Linux only (RUSAGE_THREAD). Wraps asyncio.events.Handle._run, which every callback and task
step of the loop runs through (3.9 to 3.13)."""

from __future__ import annotations

import asyncio.events
import contextlib
import gc
import resource
import time
from typing import Dict, Iterator, List


class SlowCallbacks:
    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.found: List[Dict] = []
        self.watching = True  # the code under test may narrow what is measured
        self._gc_started = 0.0
        self._gc: List = []

    def _on_gc(self, phase: str, info: Dict) -> None:
        if phase == "start":
            self._gc_started = time.thread_time()
        else:
            self._gc.append((info["generation"], time.thread_time() - self._gc_started))

    def kinds(self) -> Dict[str, int]:
        counts: Dict[str, int] = {}
        for slow in self.found:
            counts[slow["kind"]] = counts.get(slow["kind"], 0) + 1
        return counts

    def of_kind(self, kind: str) -> List[Dict]:
        return [slow for slow in self.found if slow["kind"] == kind]

    def _measured(self, handle, wall: float, cpu: float, before, after) -> None:
        voluntary = after.ru_nvcsw - before.ru_nvcsw
        full_gc = sum(seconds for generation, seconds in self._gc if generation == 2)
        if voluntary:
            kind = "waited"
        elif cpu < self.threshold:
            kind = "preempted"
        elif full_gc and cpu - full_gc < self.threshold:
            kind = "collected"
        else:
            kind = "computed"
        self.found.append(
            {
                "kind": kind,
                "wall_ms": round(wall * 1000, 1),
                "cpu_ms": round(cpu * 1000, 1),
                "full_gc_ms": round(full_gc * 1000, 1),
                "voluntary": voluntary,
                "involuntary": after.ru_nivcsw - before.ru_nivcsw,
                "callback": repr(handle)[:200],
            }
        )


@contextlib.contextmanager
def slow_callbacks(threshold: float) -> Iterator[SlowCallbacks]:
    """Every callback of this thread's loops over `threshold` seconds, while inside."""
    watch = SlowCallbacks(threshold)
    original = asyncio.events.Handle._run

    def run(handle):
        # The wall time spans the measuring too: asyncio's own timing of the callback does,
        # and a loaded machine may preempt the thread in these system calls as well.
        started = time.perf_counter()
        watch._gc.clear()
        before, cpu = resource.getrusage(resource.RUSAGE_THREAD), time.thread_time()
        try:
            return original(handle)
        finally:
            cpu = time.thread_time() - cpu
            after = resource.getrusage(resource.RUSAGE_THREAD)
            wall = time.perf_counter() - started
            if wall >= threshold and watch.watching:
                watch._measured(handle, wall, cpu, before, after)

    asyncio.events.Handle._run = run
    gc.callbacks.append(watch._on_gc)
    try:
        yield watch
    finally:
        asyncio.events.Handle._run = original
        gc.callbacks.remove(watch._on_gc)
