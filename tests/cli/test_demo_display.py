"""The demo's display (issue 15, item 13): a legend, lines that fit the terminal, no `\\r`
when stdout is not a terminal, the same rate in the last line and the summary, and its
deliberate failures kept minutes, not a year."""

import os
import re
import subprocess
import sys

import pytest

from rqconc.demo import FAILURE_TTL, LEGEND, progress_line
from rqconc.store.keys import KeySpace
from tests.support.worker_process import ROOT


def test_a_wide_pool_is_shown_as_counts_within_the_width():
    states = ["busy"] * 150 + ["idle"] * 50
    line = progress_line(120, 300, states, 432.0, 80)
    assert len(line) < 80 and "50. 150#" in line
    assert "[##.]" in progress_line(1, 3, ["busy", "busy", "idle"], 1.0, 80)


@pytest.mark.parametrize("backend", ["forking", "gevent"])
def test_demo_output_without_a_terminal(backend, redis_server):
    env = dict(os.environ, COLUMNS="60")
    argv = [sys.executable, str(ROOT / "main.py"), backend, "50", "--demo", "300"]
    result = subprocess.run(
        [*argv, "--url", redis_server.url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stdout and LEGEND in result.stdout
    lines = result.stdout.splitlines()
    progress = [line for line in lines if " done  children " in line]
    assert progress and all(len(line) < 60 for line in progress), progress
    summary = next(line for line in lines if line.startswith("300 demo jobs"))
    rate = re.compile(r"(\d+) jobs/s")
    assert rate.search(progress[-1]).group(1) == rate.search(summary).group(1), lines
    client = redis_server.client()
    failed = client.zrange(KeySpace("rqconc").failed("demo"), 0, -1)
    assert failed
    assert 0 < client.ttl(KeySpace("rqconc").job(failed[0].decode())) <= FAILURE_TTL
