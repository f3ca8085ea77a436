"""SPEC section 13: one namespace on a Redis Cluster against the same worker on one Redis (in
the same run: the ratio is what counts, target within 15%), and 3 namespaces on the 3
masters of the cluster at once (their sum).

    .venv/bin/python bench/cluster_scale.py [--runs 3] [--jobs 10000]

The cluster is the test suite's: 3 masters + 3 replicas on local ports
(tests/support/cluster.py), the single Redis a node of the same kind without cluster mode.
Every worker is `forking 2` (bench/cluster_worker.py: a Supervisor with `namespace=`), its
no-op job one INCR of a counter in its own namespace's slot, so that on the cluster the
task's command goes to the master that serves the namespace, as rqconc's own steps do. The
clock runs from the first completion seen to the last, as in bench/driver.py.
`make bench` (bench/run.py) runs this after the peers and adds its table to RESULTS.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Workers, worker_env  # noqa: E402
from rqconc import Queue  # noqa: E402
from rqconc.cli.cluster import suggestions  # noqa: E402
from rqconc.connection.clients import connect  # noqa: E402
from tests.support.cluster import RedisClusterProcesses  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402

QUEUE = "bench"
TASK = "bench.cluster_tasks:count"
BATCH = 1000
RUN_LIMIT = 60.0  # s: a run slower than this is a failure, not a measurement


def counter(namespace: str) -> str:
    return "{" + namespace + "}:bench:done"


def fill(url: str, namespace: str, jobs: int) -> None:
    queue = Queue(QUEUE, connection=url, namespace=namespace)
    for start in range(0, jobs, BATCH):
        size = min(BATCH, jobs - start)
        queue.enqueue_many([(TASK, (counter(namespace),))] * size, result_ttl=0)


def one_run(url: str, namespaces: Sequence[str], jobs: int, flush: Any) -> float:
    """Jobs/s of `jobs` no-op jobs per namespace, one `forking 2` worker per namespace."""
    flush()
    for namespace in namespaces:
        fill(url, namespace, jobs)
    client = connect(url)
    workers = Workers()
    try:
        for namespace in namespaces:
            argv = [sys.executable, "-m", "bench.cluster_worker", url, namespace]
            workers.start(argv, worker_env(url))
        return _rate(client, namespaces, jobs, workers)
    finally:
        workers.kill()
        client.close()


def _rate(client: Any, namespaces: Sequence[str], jobs: int, workers: Workers) -> float:
    target = jobs * len(namespaces)
    deadline = time.monotonic() + RUN_LIMIT
    first_time, first_count = 0.0, 0
    while True:
        now = time.perf_counter()
        done = sum(int(client.get(counter(ns)) or 0) for ns in namespaces)
        if done and not first_time:
            first_time, first_count = now, done
        if done >= target:
            return (done - first_count) / max(now - first_time, 1e-6)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{done} of {target} jobs done in {RUN_LIMIT:g} s")
        workers.check_alive()
        time.sleep(0.002)


def measure(runs: int = 3, jobs: int = 10_000) -> Dict[str, Any]:
    """{"single": [rates], "cluster": [rates], "three": [rates], "namespaces": [...]}."""
    single = RedisServer(_binary()).start()
    cluster = RedisClusterProcesses(_binary()).start()
    try:
        names = [name for name, _ in suggestions(connect(cluster.url), 3, "ns")]  # type: ignore[arg-type]
        found: Dict[str, Any] = {"single": [], "cluster": [], "three": [], "namespaces": names}
        for _ in range(runs):  # alternating, so that a busy moment hits both alike
            found["single"].append(one_run(single.url, ["rqconc"], jobs, _flush_single(single)))
            found["cluster"].append(one_run(cluster.url, ["rqconc"], jobs, cluster.flushall))
        for _ in range(runs):  # half as many per namespace: the run lasts as long
            found["three"].append(one_run(cluster.url, names, jobs // 2, cluster.flushall))
        return found
    finally:
        cluster.close()
        single.close()


def _binary() -> str:
    from bench.common import redis_binary

    return redis_binary()


def _flush_single(server: RedisServer) -> Any:
    return lambda: server.client().flushall()


def lines(found: Dict[str, Any]) -> List[str]:
    """The results as a Markdown table (and the ratio the SPEC targets)."""
    single, one = statistics.median(found["single"]), statistics.median(found["cluster"])
    three = statistics.median(found["three"])

    def runs(rates: List[float]) -> str:
        return ", ".join(f"{r:,.0f}" for r in rates)

    ratio = one / single
    verdict = "meets" if ratio >= 0.85 else "MISSES"
    return [
        "| deployment | worker(s) | jobs/s (median) | runs |",
        "|---|---|---:|---|",
        f"| one Redis | forking 2 | {single:,.0f} | {runs(found['single'])} |",
        f"| Redis Cluster 3+3, one namespace | forking 2 | {one:,.0f} | {runs(found['cluster'])} |",
        f"| Redis Cluster 3+3, 3 namespaces on 3 masters ({', '.join(found['namespaces'])}) "
        f"| 3 x forking 2 | {three:,.0f} (sum) | {runs(found['three'])} |",
        "",
        f"One namespace on the cluster runs at {ratio:.0%} of one Redis "
        f"(SPEC 13: within 15%: {verdict} it).",
    ]


def append_section(results: Path, found: Dict[str, Any]) -> None:
    """Add the scale-out table to RESULTS.md (written by the full run just before)."""
    text = results.read_text() if results.exists() else ""
    results.write_text(
        text.rstrip("\n")
        + "\n\n## Scale-out: one namespace on a Redis Cluster, and 3 namespaces on 3 masters\n\n"
        + "`bench/cluster_scale.py` (SPEC 13), in the same run; no-op jobs, 10,000 (5,000 per "
        + "namespace with 3).\n\n"
        + "\n".join(lines(found))
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=10_000)
    args = parser.parse_args()
    began = time.monotonic()
    found = measure(args.runs, args.jobs)
    print("\n".join(lines(found)))
    print(f"({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
