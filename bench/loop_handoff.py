"""What the asyncio backend pays per job to run a coroutine on its shared loop (SPEC 13's
`asyncio 200` row, bench/RESULTS.md): a slot thread hands the coroutine to the loop's thread
and waits for it (event_loops.SharedLoop), against a thread running it in a loop of its own
(event_loops.ChildLoop), and the bare cross-thread hop (call_soon_threadsafe, then a lock
released by the loop). CPU of the whole process per call, so both threads count.

    .venv/bin/python bench/loop_handoff.py [--calls 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rqconc.engine import event_loops  # noqa: E402


async def _nothing() -> int:
    return 1


def cpu_per_call(call: Callable[[], object], calls: int) -> float:
    """Process CPU (us) per call."""
    started = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - started) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    host = event_loops.LoopThread("bench-loop")
    shared = event_loops.SharedLoop(lambda: host.loop)
    own = event_loops.ChildLoop()

    def hop() -> None:
        released = threading.Lock()
        released.acquire()
        host.loop.call_soon_threadsafe(released.release)
        released.acquire()

    cases = {
        "SharedLoop.run (asyncio backend)": lambda: shared.run(_nothing()),
        "ChildLoop.run (the thread's own loop)": lambda: own.run(_nothing()),
        "bare hop to the loop's thread and back": hop,
    }
    for name, call in cases.items():
        runs = [cpu_per_call(call, args.calls) for _ in range(args.runs)]
        each = ", ".join(f"{r:.0f}" for r in runs)
        print(f"{name:40} {statistics.median(runs):6.0f} us CPU per call ({each})")
    host.close()


if __name__ == "__main__":
    main()
