"""The benchmark harness still runs: the rqconc driver on 200 no-op jobs (about 3 s)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_rqconc_driver_counts_every_job(redis_url, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.driver",
            "rqconc",
            "throughput",
            "--mode",
            "forking:2",
            "--jobs",
            "200",
            "--url",
            redis_url,
            "--timeout",
            "40",
            "--logdir",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=55,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert "error" not in result, result
    # The driver refuses a run whose counter is not exactly the job count.
    assert result["jobs"] == 200 and 0 < result["counted_jobs"] <= 200
    assert result["rate"] > 0
    assert "main.py forking 2" in result["commands"][0]


def test_redis_cost_driver_measures_each_phase_of_a_quiet_job(redis_url):
    """bench/redis_cost.py's driver: 300 jobs whose task sends Redis nothing; the server's CPU
    per job of each phase is positive, and a run whose job count is off is refused."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.cost_driver", "rqconc", "--url", redis_url]
        + ["--mode", "forking:2", "--jobs", "300", "--singles", "100", "--timeout", "40"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=55,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    for phase in ("enqueue_single", "enqueue_batch", "run"):
        assert result[phase]["cpu_us"] > 0, result
        assert "evalsha" in result[phase]["commands"], result[phase]
    # The quiet task sends nothing: no INCR of the no-op counter in any phase.
    assert "incr" not in result["run"]["commands"], result["run"]
