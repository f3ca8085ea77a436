"""The benchmark harness still runs: the rqconc driver on 200 no-op jobs (about 3 s), the SPEC
15 rows on a few hundred jobs, the asyncio peers' harnesses when bench/.peers-venv is there,
and bench/run.py's row selection and RESULTS.md sections."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

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


def _cost_driver(redis_url, *args):
    """bench/cost_driver.py's result for rqconc with these arguments (a 40 s limit)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.cost_driver", "rqconc", "--url", redis_url, *args]
        + ["--timeout", "40"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=55,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_redis_cost_driver_measures_each_phase_of_a_quiet_job(redis_url):
    """bench/redis_cost.py's driver: 300 jobs whose task sends Redis nothing; the server's CPU
    per job of each phase is positive, and a run whose job count is off is refused."""
    result = _cost_driver(redis_url, "--mode", "forking:2", "--jobs", "300", "--singles", "100")
    for phase in ("enqueue_single", "enqueue_batch", "run"):
        assert result[phase]["cpu_us"] > 0, result
        # A step by SHA (6.2, and the single enqueue everywhere) or as a function (7.0+).
        assert {"evalsha", "fcall"} & set(result[phase]["commands"]), result[phase]
    # The quiet task sends nothing: no INCR of the no-op counter in any phase.
    assert "incr" not in result["run"]["commands"], result["run"]


def test_redis_cost_driver_runs_spec_15s_async_def_job_on_the_native_core(redis_url):
    """`--task aquiet10` (SPEC 15's job, awaiting 10 ms, sending Redis nothing) on `asyncio
    200`: every job counted once, no INCR, the worker's takes and completions combined
    (fewer steps than jobs)."""
    result = _cost_driver(
        redis_url, "--mode", "asyncio:200", "--task", "aquiet10", "--jobs", "400", "--singles", "50"
    )
    assert result["task"] == "aquiet10" and result["run"]["cpu_us"] > 0, result
    commands = result["run"]["commands"]
    assert "incr" not in commands, commands
    steps = sum(commands.get(name, {}).get("calls", 0) for name in ("evalsha", "fcall"))
    assert 0 < steps < 1, commands  # calls per job: jobs share their steps


def _driver(python, system, workload, redis_url, tmp_path, *extra):
    done = subprocess.run(
        [str(python), "-m", "bench.driver", system, workload, "--url", redis_url]
        + ["--timeout", "40", "--logdir", str(tmp_path), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=55,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert "error" not in result, result
    return result


def test_async_enqueue_and_async_def_rows_of_spec_15(redis_server, tmp_path):
    """The SPEC 15 rows' harness: 300 enqueues from 100 coroutines (rqconc.aio), then 300
    `async def` jobs on `asyncio 200`, every one counted (one Redis: the harness is checked,
    not the store)."""
    redis_url = redis_server.url
    result = _driver(sys.executable, "rqconc", "aenqueue", redis_url, tmp_path, "--jobs", "300")
    assert result["jobs"] == 300 and result["coroutines"] == 100 and result["rate"] > 0
    result = _driver(
        sys.executable,
        "rqconc",
        "throughput",
        redis_url,
        tmp_path,
        *("--mode", "asyncio:200", "--task", "asleep10", "--jobs", "300"),
    )
    assert result["jobs"] == 300 and result["rate"] > 0


PEERS_PYTHON = ROOT / "bench" / ".peers-venv" / "bin" / "python"


@pytest.mark.skipif(not PEERS_PYTHON.exists(), reason="no bench/.peers-venv (make bench makes it)")
@pytest.mark.parametrize("system", ["saq", "streaq"])
def test_asyncio_peer_harness_runs_async_def_jobs(system, redis_server, tmp_path):
    """The SAQ and streaQ harnesses: 200 `async def` jobs on 2 processes, every one counted
    (the driver refuses a count that is off), and their asyncio enqueue from 100 coroutines."""
    redis_url = redis_server.url
    version = redis_server.client().info()["redis_version"]
    if system == "streaq" and int(version.split(".")[0]) < 7:
        pytest.skip("streaQ loads a Redis 7 function library (FUNCTION LOAD)")
    result = _driver(
        PEERS_PYTHON,
        system,
        "throughput",
        redis_url,
        tmp_path,
        *("--mode", "2:20", "--task", "asleep10", "--jobs", "200"),
    )
    assert result["jobs"] == 200 and f"bench.peers.{system}" in result["commands"][0]
    result = _driver(PEERS_PYTHON, system, "aenqueue", redis_url, tmp_path, "--jobs", "200")
    assert result["rate"] > 0


def test_key_rows_medians_and_sections_that_keep_each_other(tmp_path):
    """bench/run.py's logic without a run: --quick keeps the issue's key rows (no-op forking 2
    against Dramatiq -p 2 -t 8, SPEC 15's rows, async enqueue, latency), BENCH_JOBS caps the
    job counts, a summary is the median of its runs, and each script's section of RESULTS.md
    is replaced in place without touching the others'."""
    from bench import run
    from bench.common import replace_section

    quick = run.select_rows(set(), quick=True, cap=500)
    shown = {(r.group, r.system, r.label) for r in quick}
    assert (run.NOOP, "rqconc", "forking 2") in shown
    assert (run.NOOP, "dramatiq", "-p 2 -t 8") in shown
    assert {r.system for r in quick if r.group == run.ASYNC200} >= {
        "rqconc",
        "saq",
        "streaq",
        "arq",
        "dramatiq",
    }
    assert {r.label for r in quick if r.system == "rqconc" and r.group == run.ASYNC200} == {
        "asyncio 200 (one process)",
        "forking 2 --slots 100",
    }
    assert any(r.group == run.AENQ for r in quick) and all(r.jobs <= 500 for r in quick)
    row = quick[0]
    summary = run.summarize(row, [{"rate": 3.0}, {"rate": 1.0}, {"rate": 2.0}])
    assert summary["median"] == 2.0 and summary["values"] == [3.0, 1.0, 2.0]
    assert "error" in run.summarize(row, [{"rate": 1.0}, {"error": "x"}])

    # Issue 33's line reads its own Dramatiq -p 2 -t 8 row, not the row tuned to -t 16.
    reference = next(r for r in quick if r.label == run.DRAMATIQ_REFERENCE)
    ours = next(r for r in quick if r.label == "forking 2")
    tuned = replace(ours, system="dramatiq", label="-p 2 -t 16")
    medians = [(ours, {"median": 6000.0}), (tuned, {"median": 5000.0})]
    assert "not measured" in run.reference_verdict(medians)
    line = run.reference_verdict(medians + [(reference, {"median": 3000.0})])
    assert "2.00x" in line and "| yes |" in line
    assert "**no**" in run.reference_verdict(medians + [(reference, {"median": 4500.0})])

    results = tmp_path / "RESULTS.md"
    results.write_text("<!-- a:begin -->\nold a\n<!-- a:end -->\n\nkept\n")
    replace_section(
        "<!-- b:begin -->", "<!-- b:end -->", "<!-- b:begin -->\nb\n<!-- b:end -->", path=results
    )
    replace_section(
        "<!-- a:begin -->",
        "<!-- a:end -->",
        "<!-- a:begin -->\nnew a\n<!-- a:end -->",
        path=results,
    )
    text = results.read_text()
    assert (
        "new a" in text and "old a" not in text and "kept" in text and text.endswith("b:end -->\n")
    )
