"""SPEC 18, cron in a time zone on a real worker across both DST changes (issue #36).

The clock is not moved: the zone is. A synthetic zone, compiled with zic for this test,
springs forward by SAVE seconds a few seconds from now and falls back SPAN seconds later,
both at exact seconds of Redis' TIME (the clock the scheduler reads). The worker finds it
through PYTHONTZPATH, the test itself through zoneinfo.reset_tzpath. Standard time is UTC
(offset 0), so a wall time is written as the UTC time of the same second. Then:
- a daily cron whose wall time was skipped runs once, at the transition (SPRING);
- a daily cron whose wall time occurred twice runs once, in its first pass (FALL);
- a cron of every second has one job per instant, none in the second pass of the
  repeated seconds (their wall times ran in the first pass), each run exactly once."""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
import subprocess
import zoneinfo

import pytest

from rqconc.connection.clients import connect
from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from rqconc.worker.scheduler import leader
from tests.support.waiting import wait_for

KEYS = KeySpace()
ZONE = "Test/Dst"
SAVE = 3  # the DST save: SAVE wall seconds skipped at SPRING, repeated at FALL
LEAD = 3  # seconds from the registration to the spring-forward
SPAN = 5  # seconds of DST: more than SAVE, so the first pass of the repeat is all in DST
UTC = dt.timezone.utc
OTHER_QUEUE = "dst-threading"  # served by a threading worker beside the forking one
CRONS = [("cron", "spring"), ("cron", "fall"), (OTHER_QUEUE, "threading"), ("cron", "every")]


def utc(instant: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(instant, UTC)


def zic_time(instant: int) -> str:
    """A zic date and time of day in UTC: `2026 Nov 28 23:00:05u`."""
    return utc(instant).strftime("%Y %b %d %H:%M:%Su")


def compile_zone(zone_dir, spring: int, fall: int) -> None:
    """ZONE: UTC, but SAVE seconds of DST from `spring` to `fall` (Unix seconds). The
    rules live in an era of their own so that zic's footer (the rule after the last
    transition) is plain standard time."""
    source = zone_dir.parent / "test-dst.zic"
    source.write_text(
        f"Rule\tTdst\t{utc(spring).year}\tonly\t-\t{zic_time(spring)[5:]}\t0:00:{SAVE:02d}\tD\n"
        f"Rule\tTdst\t{utc(fall).year}\tonly\t-\t{zic_time(fall)[5:]}\t0\tS\n"
        f"Zone\t{ZONE}\t0:00\t-\tTST\t{zic_time(spring - 60)}\n"
        f"\t\t\t0:00\tTdst\tT%sT\t{zic_time(fall + 60)}\n"
        "\t\t\t0:00\t-\tTST\n"
    )
    subprocess.run(
        [shutil.which("zic") or "/usr/sbin/zic", "-d", str(zone_dir), str(source)], check=True
    )


def daily_at(instant: int) -> str:
    """A six-field (seconds last) expression of every day at the UTC time of `instant`."""
    when = utc(instant)
    return f"{when.minute} {when.hour} * * * {when.second}"


@pytest.fixture
def zone_dir(tmp_path, monkeypatch):
    """An empty zoneinfo directory, searched first by the test and by the workers it
    starts; zoneinfo's search path and cache are restored after."""
    path = tmp_path / "zoneinfo"
    path.mkdir()
    original = zoneinfo.TZPATH  # not reset_tzpath(): PYTHONTZPATH is still set then
    monkeypatch.setenv("PYTHONTZPATH", str(path))
    zoneinfo.reset_tzpath([str(path)])
    yield path
    zoneinfo.reset_tzpath(original)
    zoneinfo.ZoneInfo.clear_cache(only_keys=[ZONE])


def cron_jobs(client, cron_id: str) -> dict:
    """{tick: job hash} for every job of the cron `cron_id` that exists."""
    prefix = KEYS.job(f"cron.{cron_id}.")
    keys = client.keys(prefix + "*")
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.hgetall(key)
    jobs = {}
    for key, raw in zip(keys, pipe.execute()):
        if raw:
            tick = int(key.decode()[len(prefix) :])
            jobs[tick] = {k.decode(): v.decode() for k, v in raw.items()}
    return jobs


def done(client, cron_id: str, tick: int) -> bool:
    return cron_jobs(client, cron_id).get(tick, {}).get("status") == "finished"


def ran_once(client, cron_id: str, jobs: dict) -> None:
    """Every job finished after one attempt, none before its tick, one execution each."""
    assert all(j["status"] == "finished" and j["attempts"] == "1" for j in jobs.values()), jobs
    assert all(int(j["started_at"]) / 1000 >= tick for tick, j in jobs.items()), jobs
    assert client.llen(f"runs-{cron_id}") == len(jobs)


def register(url: str, spring: int, fall: int) -> int:
    """The crons of the test, in ZONE; the first tick of the every-second ones."""
    job = "tests.worker.cron_jobs:record_run"
    for queue, cron_id, expr in (
        ("cron", "spring", daily_at(spring + SAVE // 2)),  # skipped: runs at the transition
        ("cron", "fall", daily_at(fall + SAVE // 2)),  # repeated: a first and a second pass
        (OTHER_QUEUE, "threading", "* * * * * *"),
        ("cron", "every", "* * * * * *"),
    ):
        entry = Queue(queue, url).cron(expr, job, url, f"runs-{cron_id}", id=cron_id, tz=ZONE)
    return int(entry.registered_at) + 1  # of the last, planned no earlier than the other


def assert_every_second(client, cron_id: str, first: int, fall: int, last: int) -> None:
    """One job per instant: the skipped wall seconds all land on the spring-forward (one
    job); the instants of the repeat's second pass have none (their wall times ran)."""
    jobs = cron_jobs(client, cron_id)
    ticks = sorted(jobs)
    repeat = range(fall, fall + SAVE)
    assert first - 1 <= ticks[0] <= first and ticks[-1] >= last, ticks
    assert ticks == [t for t in range(ticks[0], ticks[-1] + 1) if t not in repeat], ticks
    assert {json.loads(j["meta"])["tick"] for j in jobs.values()} == set(ticks)
    ran_once(client, cron_id, jobs)


def stop_crons(url: str, client) -> None:
    """Remove the crons, then let the jobs they started end."""
    for queue, cron_id in CRONS:
        assert Queue(queue, url).remove_cron(cron_id) is True
    wait_for(
        lambda: all(
            j["status"] == "finished"
            for c in ("every", "threading")
            for j in cron_jobs(client, c).values()
        ),
        timeout=10,  # generous: a run beside a load of 20 on 2 cores needed more than 5 s
        message="every started tick job finished",
    )


def test_cron_in_a_zone_fires_each_tick_once_across_both_dst_changes_on_real_workers(
    redis_server, start_worker, zone_dir
):
    """The forking worker leads the scheduler and runs the "cron" queue; a threading
    worker beside it runs a second every-second cron's jobs."""
    url = redis_server.url
    client = connect(url)
    start_worker("forking", 2, url, "-q", "cron", "--name", "dst-forking")
    wait_for(lambda: leader(client, KEYS), timeout=20, message="the worker leads the scheduler")
    start_worker("threading", 2, url, "-q", OTHER_QUEUE, "--name", "dst-threading")

    seconds, micros = client.time()  # Redis' clock: the scheduler's
    spring = math.ceil(seconds + micros / 1e6) + LEAD
    fall = spring + SPAN
    compile_zone(zone_dir, spring, fall)
    first = register(url, spring, fall)
    assert first < spring  # every second ticks before the change, too

    # Past the second pass of the fall-back window, with the jobs of its last tick done.
    last = fall + SAVE + 2
    wait_for(
        lambda: all(done(client, c, last) for c in ("every", "threading")),
        timeout=last - client.time()[0] + 10,
        message=f"the jobs of tick {last} finished",
    )
    stop_crons(url, client)
    springs, falls = cron_jobs(client, "spring"), cron_jobs(client, "fall")
    assert sorted(springs) == [spring]  # once, at the first valid time after the gap
    # Once: its first pass (still in DST, SAVE s ahead of UTC), not the second.
    assert sorted(falls) == [fall + SAVE // 2 - SAVE]
    ran_once(client, "spring", springs)
    ran_once(client, "fall", falls)
    for cron_id in ("every", "threading"):
        assert_every_second(client, cron_id, first, fall, last)
