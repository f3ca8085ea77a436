"""SPEC section 3, cron on real workers: a cron of every second run by three supervisors at
once fires exactly once per tick (counted tick by tick: no duplicate, no gap), starts within
1 s of its tick, and keeps firing exactly once when the leading supervisor is SIGKILLed."""

import json
import math
import signal
import time

import pytest

from rqconc.connection.clients import connect
from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from rqconc.worker.scheduler import LOOKAHEAD, leader
from tests.cli.test_commands import rqconc
from tests.support.waiting import wait_for

KEYS = KeySpace()
# Ticks counted before the leader is killed: every supervisor is up and polling before the
# first, so four already see all three race for each tick (a duplicate would show in any).
WINDOW = 4


def tick_jobs(client):
    """{tick: job hash} for every job of the cron "every" that exists."""
    ids = [k.decode()[len(KEYS.job_prefix) :] for k in client.keys(KEYS.job("cron.every.*"))]
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hgetall(KEYS.job(job_id))
    jobs = {}
    for job_id, raw in zip(ids, pipe.execute()):
        if raw:
            jobs[int(job_id.rsplit(".", 1)[1])] = {k.decode(): v.decode() for k, v in raw.items()}
    return jobs


def finished(client, tick):
    return tick_jobs(client).get(tick, {}).get("status") == "finished"


def test_a_cron_of_every_second_on_three_supervisors_fires_once_per_tick_even_when_the_leader_is_killed(  # noqa: E501
    redis_server, start_worker
):
    url = redis_server.url
    client = connect(url)
    workers = {
        name: start_worker("threading", 2, url, "-q", "cron", "--name", name)
        for name in ("sup-a", "sup-b", "sup-c")
    }

    def all_idle():
        names = [n.decode() for n in client.zrange(KEYS.workers, 0, -1)]
        return len(names) == 3 and all(client.hget(KEYS.worker(n), "idle") == b"2" for n in names)

    wait_for(all_idle, timeout=20, message="3 supervisors up, their children idle")
    entry = Queue("cron", url).cron(
        "* * * * * *", "tests.worker.cron_jobs:record_run", url, "runs", id="every"
    )
    first = int(entry.registered_at) + 1

    # WINDOW ticks on three supervisors.
    wait_for(
        lambda: finished(client, first + WINDOW - 1),
        timeout=WINDOW + 8,
        message=f"the job of tick {first + WINDOW - 1} finished",
    )

    # SIGKILL the leader between two ticks' jobs (a job killed mid-run may run again, by
    # design, after its lease runs out: that would not be the scheduler's doing).
    host, pid, name = leader(client, KEYS)
    victim = workers[name]
    assert victim.pid == pid
    wait_for(
        lambda: 0.2 <= time.time() % 1 <= 0.6 and finished(client, int(time.time())),
        timeout=5,
        message="a quiet moment between ticks",
    )
    victim.signal(signal.SIGKILL)
    victim.wait_exit(5)
    killed_at = time.time()

    # Past the dead leader's horizon: these ticks exist only if another supervisor took over.
    # (The dead leader enqueued up to killed_at + LOOKAHEAD at most.)
    last = math.ceil(killed_at + LOOKAHEAD) + 1
    wait_for(
        lambda: finished(client, last),
        timeout=last - time.time() + 8,
        message=f"the job of tick {last} finished after the leader was killed",
    )
    successor = leader(client, KEYS)
    assert successor is not None and successor[2] != name

    # Stop the cron, let the started jobs end, then count tick by tick.
    assert Queue("cron", url).remove_cron("every") is True
    wait_for(
        lambda: all(j["status"] == "finished" for j in tick_jobs(client).values()),
        timeout=5,
        message="every started tick job finished",
    )
    jobs = tick_jobs(client)
    ticks = sorted(jobs)
    assert ticks[0] == first and ticks == list(range(first, ticks[-1] + 1)), ticks  # no gap
    assert ticks[-1] >= last
    assert all(j["attempts"] == "1" for j in jobs.values()), jobs  # each ran once
    runs = [json.loads(r) for r in client.lrange("runs", 0, -1)]
    assert len(runs) == len(ticks)  # no execution beyond one per tick
    lateness = {t: int(j["started_at"]) / 1000 - t for t, j in jobs.items()}
    assert all(0 <= late < 1 for late in lateness.values()), lateness  # within 1 s
    print(
        f"{len(ticks)} ticks, killed {name} at {killed_at:.2f}, successor {successor[2]}; "
        f"start after tick: max {max(lateness.values()) * 1000:.1f} ms, "
        f"median {sorted(lateness.values())[len(ticks) // 2] * 1000:.1f} ms"
    )
    assert {json.loads(j["meta"])["tick"] for j in jobs.values()} == set(ticks)


@pytest.mark.parametrize("backend", ["threading", "forking"])
def test_a_leader_that_stops_releases_its_lease_and_only_its_own(
    redis_server, start_worker, backend
):
    """`rqconc cron list` never names a worker that has exited: a stopping supervisor gives
    the lease up at once (not LEASE_MS later), and one that does not lead leaves it alone."""
    url = redis_server.url
    client = connect(url)
    Queue("cron", url).cron("0 0 1 1 *", "tests.worker.cron_jobs:record_run", url, "r", id="yearly")
    first = start_worker(backend, 1, url, "-q", "cron", "--name", "lead-a")
    wait_for(lambda: leader(client, KEYS), timeout=20, message="a leader")
    assert leader(client, KEYS)[2] == "lead-a"
    second = start_worker(backend, 1, url, "-q", "cron", "--name", "lead-b")
    wait_for(lambda: client.zcard(KEYS.workers) == 2, timeout=20, message="both registered")
    second.signal(signal.SIGTERM)
    second.wait_exit(20)
    assert leader(client, KEYS)[2] == "lead-a"  # not lead-b's lease: left as it was
    first.signal(signal.SIGTERM)
    first.wait_exit(20)
    assert client.get(KEYS.scheduler_lease) is None  # released on stop, not expired later
    listed = rqconc("cron", "list", "--url", url)
    assert listed.stdout.splitlines()[-1] == "scheduler: no leader (no worker is running)"
