"""SPEC 18 on real Redis with a controlled clock (the scheduler takes `now`): cron in a time
zone across both DST changes of Europe/Berlin (each wall-clock tick once, a skipped one at
the transition, a repeated one in its first pass only), times/start/end, skip_if_running."""

import datetime as dt
import json

import pytest

from rqconc.queue.schedule import zones
from rqconc.worker.scheduler import Scheduler
from tests.queue import tasks
from tests.queue.test_cron import cron_jobs, ticks_of

UTC = dt.timezone.utc


def at(*fields):
    return int(dt.datetime(*fields, tzinfo=UTC).timestamp())


def drive(scheduler, start, end, step=60):
    for now in range(start, end + 1, step):
        scheduler.tick(now=float(now))


@pytest.fixture
def scheduler(client, keys):
    return Scheduler(client, keys, "worker-z")


SPRING = (
    (2027, 3, 27, 23, 0),
    (2027, 3, 28, 3, 0),
    # 00:30 01:00 01:30 CET; 02:00 and 02:30 skipped: both run at 03:00 CEST with 03:00's
    # own tick (one instant, one job); 03:30 04:00 04:30 05:00 CEST
    [(3, 27, 23, 30), (3, 28, 0, 0), (3, 28, 0, 30), (3, 28, 1, 0), (3, 28, 1, 30)]
    + [(3, 28, 2, 0), (3, 28, 2, 30), (3, 28, 3, 0)],
)
FALL = (
    (2027, 10, 30, 23, 0),
    (2027, 10, 31, 3, 0),
    # 01:30 02:00 02:30 CEST; the repeated 02:00 and 02:30 (CET) do not run again;
    # 03:00 03:30 04:00 CET
    [(10, 30, 23, 30), (10, 31, 0, 0), (10, 31, 0, 30), (10, 31, 2, 0), (10, 31, 2, 30)]
    + [(10, 31, 3, 0)],
)


@pytest.mark.parametrize("change", [SPRING, FALL], ids=["spring-forward", "fall-back"])
def test_a_cron_in_berlin_fires_each_wall_clock_tick_once_across_a_dst_change(
    queue, client, keys, scheduler, change
):
    start, end, expected = change
    entry = queue.cron("*/30 * * * *", tasks.add, 1, 2, id="berlin", tz="Europe/Berlin")
    assert entry.tz == "Europe/Berlin"
    drive(scheduler, at(*start), at(*end))
    # The tick due at the first `now` fires; those planned ahead past the end are left out.
    ticks = [t for t in ticks_of(cron_jobs(client, keys, "berlin")) if t <= at(*end)]
    assert ticks == [at(*start)] + [at(2027, *when) for when in expected]


def test_a_daily_time_skipped_by_spring_forward_runs_at_the_transition_once():
    berlin = zones.zone_of("Europe/Berlin")
    day_before = at(2027, 3, 27, 12, 0)
    first = zones.next_tick("30 2 * * *", day_before, berlin)
    assert first == at(2027, 3, 28, 1, 0)  # 03:00 CEST, the first valid time after 02:30
    assert zones.next_tick("30 2 * * *", first, berlin) == at(2027, 3, 29, 0, 30)
    assert zones.latest_tick("30 2 * * *", first + 60, berlin) == first


def test_a_daily_time_repeated_by_fall_back_runs_in_its_first_pass_only():
    berlin = zones.zone_of("Europe/Berlin")
    first = zones.next_tick("30 2 * * *", at(2027, 10, 30, 12, 0), berlin)
    assert first == at(2027, 10, 31, 0, 30)  # 02:30 CEST
    assert zones.next_tick("30 2 * * *", first, berlin) == at(2027, 11, 1, 1, 30)
    # In the second pass (02:40 CET) the latest tick is still the first pass's 02:30.
    assert zones.latest_tick("30 2 * * *", at(2027, 10, 31, 1, 40), berlin) == first


def test_an_unknown_zone_is_refused_at_registration_with_one_clear_error(queue):
    with pytest.raises(ValueError, match="unknown time zone 'Europe/Nowhere'"):
        queue.cron("0 9 * * *", tasks.add, 1, 2, tz="Europe/Nowhere")
    assert queue.crons() == []


def test_an_entry_stored_without_a_zone_reads_as_utc_and_is_stored_as_before(queue, client, keys):
    queue.cron("0 * * * *", tasks.add, 1, 2, id="plain")
    raw = json.loads(client.hget(keys.crons, "plain"))
    assert set(raw) == {"id", "expr", "func", "queue", "version", "registered_at", "template"}
    assert queue.crons()[0].tz == "UTC"


def test_times_fires_at_most_n_ticks_then_the_entry_removes_itself(queue, client, keys, scheduler):
    base = at(2027, 1, 1, 0, 0)
    queue.every(60, tasks.add, 1, 2, id="thrice", times=3)
    drive(scheduler, base + 1, base + 600)
    assert ticks_of(cron_jobs(client, keys, "thrice")) == [base, base + 60, base + 120]
    assert queue.crons() == []


def test_start_and_end_bound_the_ticks_exactly(queue, client, keys, scheduler):
    base = at(2027, 1, 1, 0, 0)
    start, end = dt.datetime(2027, 1, 1, 1, 3), dt.datetime(2027, 1, 1, 1, 6)  # naive: Berlin
    queue.cron("* * * * *", tasks.add, 1, 2, id="window", tz="Europe/Berlin", start=start, end=end)
    drive(scheduler, base + 1, base + 900, step=20)
    assert ticks_of(cron_jobs(client, keys, "window")) == [base + 180 + 60 * i for i in range(4)]
    assert queue.crons() == []


def test_skip_if_running_skips_while_the_previous_job_waits_and_records_the_event(
    queue, client, keys, scheduler
):
    base = at(2027, 1, 1, 0, 0)
    queue.every(60, tasks.add, 1, 2, id="single", skip_if_running=True)
    # Ticks base (due at the first pass), +60, +120, +180: the first one's job still waits.
    drive(scheduler, base + 1, base + 200, step=10)
    assert ticks_of(cron_jobs(client, keys, "single")) == [base]
    skipped = [
        {k.decode(): v.decode() for k, v in fields.items()}
        for _, fields in client.xrange(keys.events)
        if fields[b"event"] == b"skipped"
    ]
    assert [e["job_id"] for e in skipped] == [f"cron.single.{base + t}" for t in (60, 120, 180)]
    assert all(e["cron"] == "single" and e["running"] == f"cron.single.{base}" for e in skipped)
    queue.fetch_job(f"cron.single.{base}").cancel()  # the previous job ends
    drive(scheduler, base + 240, base + 240)
    assert ticks_of(cron_jobs(client, keys, "single")) == [base, base + 240]
