"""The chaos audit's matching of repeated runs to faults (tests/chaos/audit.py), on fault logs
made up here: a repeated run that no fault explains must stay unexplained, or the chaos run
could not fail on a duplicate the SPEC forbids."""

from tests.chaos.audit import SETTLE_SECONDS, cause_of
from tests.chaos.harness import FaultRecord

T0 = 1_800_000_000.0
PID = 4242


def kill(number, at, victims, kind="kill_child"):
    return FaultRecord(
        kind,
        0.0,
        wall=T0 + at,
        number=number,
        hit=True,
        victims=set(victims),
        struck=T0 + at + 0.01,
    )


def cut(number, began, seconds, kind="proxy_stall"):
    return FaultRecord(
        kind,
        0.0,
        wall=T0 + began,
        number=number,
        hit=True,
        window=(T0 + began, T0 + began + seconds),
    )


def test_a_kill_of_the_runs_process_while_it_ran_explains_it():
    faults = [kill(1, 0.2, {PID}, "kill_supervisor")]
    assert cause_of(faults, PID, T0 + 0.1) is faults[0]


def test_a_kill_of_another_process_or_before_the_run_explains_nothing():
    assert cause_of([kill(1, 0.2, {PID + 1})], PID, T0 + 0.1) is None
    assert cause_of([kill(1, 0.2, {PID})], PID, T0 + 0.5) is None


def test_a_kill_long_after_the_run_could_have_been_recorded_explains_nothing():
    # A threading worker runs every job in its supervisor's pid: killing it later is no cause.
    assert cause_of([kill(1, SETTLE_SECONDS + 1, {PID}, "cold_shutdown")], PID, T0) is None


def test_a_cut_off_long_enough_to_lose_the_lease_explains_a_run_underway():
    faults = [cut(1, 0.2, 2.5, "proxy_drop")]
    assert cause_of(faults, PID, T0) is faults[0]
    # A take whose reply the stall held back: the run starts just after the stall ended.
    assert cause_of(faults, PID, T0 + 2.9) is faults[0]


def test_a_short_cut_off_or_one_after_the_run_explains_nothing():
    assert cause_of([cut(1, 0.2, 0.2)], PID, T0) is None
    assert cause_of([cut(1, SETTLE_SECONDS + 1, 3.0, "redis_restart")], PID, T0) is None


def test_a_cut_off_delays_the_recording_so_a_fault_soon_after_still_counts():
    # Too short to cost the lease, but it held the outcome back until after the kill.
    faults = [
        cut(1, SETTLE_SECONDS - 0.5, 0.3),
        kill(2, SETTLE_SECONDS + 0.4, {PID}, "kill_supervisor"),
    ]
    assert cause_of(faults, PID, T0) is faults[1]
    assert cause_of(faults[1:], PID, T0) is None


def test_a_fault_that_hit_nothing_explains_nothing():
    fault = cut(1, 0.2, 3.0, "proxy_drop")
    fault.hit = False
    assert cause_of([fault], PID, T0) is None


def test_the_runs_own_kill_is_preferred_to_a_cut_off_that_may_have_cost_the_lease():
    faults = [cut(1, 0.1, 2.0), kill(2, 1.0, {PID})]
    assert cause_of(faults, PID, T0) is faults[1]


def reply_cut(number, began, seconds):
    return FaultRecord(
        "reply_cut",
        0.0,
        wall=T0 + began,
        number=number,
        hit=True,
        cutting=(T0 + began, T0 + began + seconds),
    )


def test_lost_replies_explain_no_repeated_run_however_long():
    # The requests ran; takes, completions, renewals and enqueues act on a lost reply so that
    # the job still runs once: a repeated run under a reply_cut alone is unexplained.
    assert cause_of([reply_cut(1, 0.1, 2.0)], PID, T0) is None
    assert cause_of([reply_cut(1, 0.1, 30.0)], PID, T0 + 5) is None


def test_lost_replies_delay_the_recording_so_a_kill_soon_after_still_counts():
    faults = [reply_cut(1, 1.0, 2.0), kill(2, SETTLE_SECONDS + 1.0, {PID}, "kill_supervisor")]
    assert cause_of(faults, PID, T0) is faults[1]
    assert cause_of(faults[1:], PID, T0) is None


def test_a_clock_skew_explains_no_repeated_run_even_of_its_own_process():
    # Leases are on Redis' clock: a restart with a wrong clock costs nobody a lease (and a
    # warm shutdown that had to be killed is a violation of its own).
    skew = kill(1, 0.2, {PID}, "clock_skew")
    assert cause_of([skew], PID, T0 + 0.1) is None
