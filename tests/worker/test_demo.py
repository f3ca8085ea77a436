"""`python main.py BACKEND SIZE --demo N`: fills the queue, shows progress, exits with a summary."""

import subprocess
import sys

import pytest

from rqconc import Queue
from tests.support.worker_process import ROOT


@pytest.mark.parametrize("backend", ["forking", "gevent"])
def test_demo_runs_every_job_and_prints_a_summary(backend, redis_server):
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "main.py"),
            backend,
            "4",
            "--demo",
            "200",
            "--url",
            redis_server.url,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    # The live display shows the jobs: no log line per job runs through it.
    assert "event=" not in result.stderr + result.stdout
    summary = result.stdout.strip().splitlines()
    assert any(f"200 demo jobs on 4 {backend} children" in line for line in summary)
    finished_line = next(line for line in summary if line.startswith("finished "))
    finished, failed = (int(word.strip(",")) for word in finished_line.split()[1:4:2])
    assert finished + failed == 200 and failed > 0  # some demo payments fail on purpose
    assert "ms" in summary[-1]
    assert len(Queue("demo", connection=redis_server.url)) == 0
