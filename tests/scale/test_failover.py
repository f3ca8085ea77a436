"""A failover under load (SPEC section 8): the master is SIGKILLed while workers on two
backends run jobs, Sentinel promotes the replica, and the run is audited
(tests/scale/failover_run.py).

In the suite, a short run; `make chaos` runs 2,000 jobs each way (FAILOVER_JOBS) and prints
the figures docs/reliability.md's failover table reports.
"""

import os

import pytest

from tests.scale.failover_run import run_failover

SUITE_JOBS = 300
CHAOS_JOBS = int(os.environ.get("FAILOVER_JOBS") or 2000)


@pytest.mark.timeout(240)
def test_a_failover_with_wait_replicas_loses_no_acknowledged_job_and_runs_none_twice_unexplained(
    redis_binary, start_worker
):
    outcome = run_failover(redis_binary, start_worker, SUITE_JOBS, wait_replicas=1)
    print(outcome.summary())
    assert outcome.acknowledged == SUITE_JOBS
    assert outcome.lost == [], outcome.summary()
    assert outcome.unexplained == [], outcome.summary()
    # SPEC: the promoted master is found within 10 s of the promotion; with wait_replicas=1
    # no step completes before a replica is back, so the 10 s count from then.
    assert outcome.resumed_after - outcome.replica_back_after < 10, outcome.summary()


@pytest.mark.chaos
@pytest.mark.timeout(900)
@pytest.mark.skipif("FAILOVER_JOBS" not in os.environ, reason="make chaos sets FAILOVER_JOBS")
@pytest.mark.parametrize("wait_replicas", [1, 0])
def test_a_failover_under_2000_jobs(wait_replicas, redis_binary, start_worker):
    """With wait_replicas=1: none lost, every repeat explained. Without: records what was
    lost (the window docs/reliability.md states), asserting nothing about it."""
    outcome = run_failover(redis_binary, start_worker, CHAOS_JOBS, wait_replicas)
    print(f"\nFAILOVER {outcome.summary()}")
    if wait_replicas:
        assert outcome.lost == [] and outcome.unexplained == [], outcome.summary()
