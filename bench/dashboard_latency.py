"""The dashboard's response times at scale (SPEC 13 and 17: under 100 ms with 1M jobs queued
and 100 workers registered, the queue's job lists included): a real `rqconc dashboard`
process, measured over HTTP.

    .venv/bin/python bench/dashboard_latency.py [--jobs 1000000] [--workers 100] [--requests 50]

`make bench` (bench/run.py) runs it against its private Redis. The Redis holds --jobs
queued jobs (batch enqueue), 1,000 dead letters, 1,000 scheduled jobs and --workers
registry entries of 8 children each; every path the page loads is then asked --requests
times over one keep-alive connection, and its median and p95 reported.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, PrivateRedis, free_port  # noqa: E402
from rqconc import Queue  # noqa: E402
from rqconc.engine.source import SupervisorInfo  # noqa: E402
from rqconc.store.keys import KeySpace  # noqa: E402
from rqconc.worker.registry import WorkerRegistry  # noqa: E402

QUEUE = "bench"
BATCH = 10_000
TARGET_MS = 100.0


def fill(url: str, jobs: int, workers: int) -> str:
    """The scene: `jobs` queued, 1,000 failed, 1,000 scheduled, `workers` registered.
    Returns one job id for the job page."""
    client = redis.Redis.from_url(url)
    client.flushall()
    q = Queue(QUEUE, connection=client)
    first = q.enqueue_many([("bench.tasks:noop", ())])[0].id
    for start in range(1, jobs, BATCH):
        q.enqueue_many([("bench.tasks:noop", (i,)) for i in range(start, min(jobs, start + BATCH))])
    q.enqueue_many([("bench.tasks:noop", (i,)) for i in range(1000)], description="later")
    for i in range(1000):
        q.enqueue_in(3600 + i, "bench.tasks:noop", i)
    _dead_letters(client, 1000)
    registry = WorkerRegistry(client, KeySpace())
    for n in range(workers):
        busy = [f"job-{n}-{c}" for c in range(4)]
        info = SupervisorInfo(
            f"bench-{n:03d}", str(n), 1000 + n, "host", "forking", 8, "busy", 4, 4, busy
        )
        registry.heartbeat(info, [QUEUE])
    return first


def _dead_letters(client: redis.Redis, count: int) -> None:
    """Moves the last `count` queued jobs to the dead letters the way a failure leaves them
    (status, error fields, failed set): what the failed page reads."""
    keys = KeySpace()
    ids = client.zrange(keys.queue(QUEUE), -count, -1)
    pipe = client.pipeline(transaction=False)
    now = int(time.time() * 1000)
    for i, job_id in enumerate(ids):
        pipe.zrem(keys.queue(QUEUE), job_id)
        pipe.hset(
            keys.job(job_id.decode()),
            mapping={
                "status": "failed",
                "exc_type": "ValueError",
                "exc_message": "bench",
                "traceback": "Traceback (most recent call last):\n  ...\nValueError: bench",
            },
        )
        pipe.zadd(keys.failed(QUEUE), {job_id: now + i})
    pipe.execute()


def _timed(conn: http.client.HTTPConnection, path: str) -> float:
    began = time.perf_counter()
    conn.request("GET", path)
    response = conn.getresponse()
    response.read()
    elapsed = (time.perf_counter() - began) * 1000
    if response.status != 200:
        raise RuntimeError(f"GET {path} answered {response.status}")
    return elapsed


def measure(url: str, job_id: str, requests: int) -> Dict[str, Dict[str, float]]:
    """{path: {"median_ms", "p95_ms"}} from a real dashboard process on `url`."""
    port = free_port()
    argv = [sys.executable, "-m", "rqconc", "dashboard", "--url", url, "--port", str(port)]
    board = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    paths = [
        "/",
        "/api/overview",
        "/api/workers",
        f"/api/failed?queue={QUEUE}",
        f"/api/scheduled?queue={QUEUE}",
        "/api/events",
        f"/api/jobs/{job_id}",
        "/metrics",
        # SPEC 17's job lists on the same queue: the first page, a page half a million jobs
        # deep, each other status, a function filter, and the per-function figures.
        f"/queues/{QUEUE}",
        f"/api/queues/{QUEUE}/jobs?status=queued",
        f"/api/queues/{QUEUE}/jobs?status=queued&offset=500000",
        f"/api/queues/{QUEUE}/jobs?status=failed",
        f"/api/queues/{QUEUE}/jobs?status=scheduled",
        f"/api/queues/{QUEUE}/jobs?status=queued&func=bench.tasks:stamp",  # none: a full scan
        f"/api/queues/{QUEUE}/functions",
    ]
    try:
        conn = _connect(port, board)
        results = {}
        for path in paths:
            _timed(conn, path)  # warm: the first call loads the Lua-free read path
            times = sorted(_timed(conn, path) for _ in range(requests))
            results[path] = {
                "median_ms": statistics.median(times),
                "p95_ms": times[max(0, int(len(times) * 0.95) - 1)],
            }
        return results
    finally:
        board.kill()
        board.wait(10)


def _connect(port: int, board: subprocess.Popen) -> http.client.HTTPConnection:
    deadline = time.monotonic() + 60
    while True:
        if board.poll() is not None:
            raise RuntimeError(f"the dashboard exited: {board.stderr.read().decode()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            _timed(conn, "/static/style.css")
            return conn
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def run(url: str, jobs: int = 1_000_000, workers: int = 100, requests: int = 50) -> Dict:
    began = time.monotonic()
    job_id = fill(url, jobs, workers)
    filled = time.monotonic() - began
    return {
        "jobs": jobs,
        "workers": workers,
        "fill_s": filled,
        "paths": measure(url, job_id, requests),
    }


def markdown(result: Dict) -> List[str]:
    """The RESULTS.md section."""
    lines = [
        "## Dashboard response times",
        "",
        f"A real `rqconc dashboard` with {result['jobs']:,} jobs queued and "
        f"{result['workers']} workers registered (`bench/dashboard_latency.py`); target "
        f"(SPEC 13): under {TARGET_MS:g} ms.",
        "",
        "| path | median (ms) | p95 (ms) | under 100 ms |",
        "| --- | ---: | ---: | --- |",
    ]
    for path, times in result["paths"].items():
        ok = "yes" if times["p95_ms"] < TARGET_MS else "**no**"
        lines.append(f"| `{path}` | {times['median_ms']:.1f} | {times['p95_ms']:.1f} | {ok} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    server = PrivateRedis().start()
    try:
        result = run(server.url, args.jobs, args.workers, args.requests)
    finally:
        server.stop()
    print("\n".join(markdown(result)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
