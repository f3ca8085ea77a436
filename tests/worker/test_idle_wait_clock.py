"""Issue 14 leftover: an idle child waits for the earliest scheduled job by Redis' clock.

The take step answers "nothing waits" with the delay until the earliest due time, measured
on Redis' clock. Computed from a due time and the worker's own clock, a worker whose clock
runs ahead saw every scheduled job as overdue and retook without blocking (a busy loop of
take steps until the job was due); one whose clock lags would wait past the due time were it
not for the short block cap. Either way the job must start on time.
"""

import time

import pytest

from rqconc import Queue
from rqconc.worker.registry import list_workers
from tests.support.clock import clock_env, install_clock
from tests.support.worker_process import wait_for

HOUR = 3600.0
AHEAD = 3.0  # seconds until the scheduled job is due
# Two idle children block at most 0.25 s per take step (two scripts each): about 16 a
# second, with heartbeats and scheduler rounds well under this. A busy loop makes thousands.
MAX_SCRIPTS_PER_SECOND = 100


def redis_now(client) -> float:
    seconds, micros = client.time()
    return seconds + micros / 1e6


def script_calls(client) -> int:
    stats = client.info("commandstats")
    names = ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_fcall")
    return sum(stats.get(name, {}).get("calls", 0) for name in names)


@pytest.mark.parametrize("skew", [HOUR, -HOUR], ids=["ahead", "behind"])
def test_an_idle_worker_with_a_skewed_clock_starts_a_scheduled_job_on_time(
    skew, redis_server, start_worker, tmp_path, monkeypatch
):
    for name, value in clock_env(install_clock(tmp_path / "clock"), skew).items():
        monkeypatch.setenv(name, value)
    worker = start_worker("forking", 2, redis_server.url)
    client = redis_server.client()
    wait_for(lambda: list_workers(client), message="the worker listed")

    due = redis_now(client) + AHEAD
    job = Queue(connection=redis_server.url).enqueue_at(due, "tests.worker.jobs:add", 1, 2)
    calls_before, began = script_calls(client), time.monotonic()
    assert job.get(timeout=AHEAD + 10) == 3, worker.output()[-3000:]
    rate = (script_calls(client) - calls_before) / (time.monotonic() - began)

    job.refresh()
    started = job.started_at.timestamp()  # written by the take step: Redis' clock
    assert abs(started - due) <= 1.0, f"started {started - due:+.2f} s from its due time"
    assert rate < MAX_SCRIPTS_PER_SECOND, f"{rate:.0f} scripts/s while idle: a busy loop"
