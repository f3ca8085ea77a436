"""A wrong wall clock for worker processes, as a host whose clock is off would have: a
`sitecustomize` module on the worker's PYTHONPATH shifts `time.time` (and `time.time_ns`) by
RQCONC_TEST_CLOCK_SKEW seconds in every interpreter of that worker (supervisor and children,
forked or spawned). Monotonic clocks are left alone, as on a real host."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

SKEW_VARIABLE = "RQCONC_TEST_CLOCK_SKEW"

SITECUSTOMIZE = """\
import os
import time

_skew = float(os.environ.get("RQCONC_TEST_CLOCK_SKEW", "0") or 0)
if _skew:
    _time, _time_ns = time.time, time.time_ns
    time.time = lambda: _time() + _skew
    time.time_ns = lambda: _time_ns() + int(_skew * 1e9)
"""


def install_clock(directory: Path) -> Path:
    """Write the sitecustomize module into `directory` (made if needed); returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return directory


def clock_env(directory: Path, skew: float) -> Dict[str, str]:
    """The environment variables that start a process with its clock `skew` seconds off."""
    return {"PYTHONPATH": str(directory), SKEW_VARIABLE: str(skew)}
