"""CPU seconds per test file, for keeping `make test` short on 2 cores: wall time on a shared
machine says more about the machine than about the test, CPU time does not.

    python -m pytest -p tests.support.cpu_report -n 4 ...   (writes .cpu-report-gwN.txt)

Counts the test process's own CPU and that of every process it started and waited for
(commands, workers, their children, Redis servers of one test), per file, largest first.
A session-wide server's CPU lands on the test that was running when it was reaped."""

from __future__ import annotations

import collections
import os
import resource
from pathlib import Path

import pytest

_totals: collections.Counter[str] = collections.Counter()


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before = _cpu()
    yield
    _totals[item.nodeid.split("::", 1)[0]] += _cpu() - before


def pytest_sessionfinish(session):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = Path(session.config.rootpath) / f".cpu-report-{worker}.txt"
    path.write_text("".join(f"{cpu:.1f} {name}\n" for name, cpu in _totals.most_common()))
