"""`--demo N`: fill a work source with N demo items, show live progress, print a summary."""
from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict

from rqconc.engine.fake_source import FakeSource
from rqconc.engine.supervisor import Supervisor

STATE_MARK = {"idle": ".", "busy": "#", "starting": "~", "ending": "x"}


def _fill_spool(spool: Path, count: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for n in range(count):
        if rng.random() < 0.3:
            spec = f'{{"cpu": {rng.uniform(0.001, 0.004):.4f}}}'
        else:
            spec = f'{{"sleep": {rng.uniform(0.002, 0.012):.4f}}}'
        (spool / f"demo{n:07d}.json").write_text(spec)


def run_demo(backend: str, size: int, options: Dict[str, Any]) -> int:
    count = options["demo"]
    workdir = Path(tempfile.mkdtemp(prefix="rqconc-demo-"))
    spool = workdir / "spool"
    spool.mkdir()
    _fill_spool(spool, count)
    log = workdir / "events.jsonl"
    began = time.monotonic()

    def show(sup: Supervisor) -> None:
        done = len(list((spool / "done").iterdir()))
        marks = "".join(STATE_MARK.get(c.state, "?") for c in sup.children)
        sys.stdout.write(f"\r{done:>7}/{count} done  children [{marks}]  "
                         f"{done / max(time.monotonic() - began, 1e-6):8.0f} items/s ")
        sys.stdout.flush()

    sup = Supervisor(backend, size, FakeSource(spool=str(spool), log=str(log)), burst=True,
                     on_tick=show)
    code = sup.run()
    elapsed = time.monotonic() - began
    done = len(list((spool / "done").iterdir()))
    print(f"\n{done} of {count} items done by {size} {backend} children in {elapsed:.2f} s "
          f"({done / elapsed:.0f} items/s); exit code {code}")
    return code
