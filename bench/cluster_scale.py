"""SPEC section 13: one namespace on a Redis Cluster against the same worker on one Redis (in
the same run: the ratio is what counts, target within 15%), and 3 namespaces on the 3
masters of the cluster at once (their sum). Like is compared with like: one Redis with a
cluster of 3 masters, and one Redis with a replica with a cluster of 3 masters + 3 replicas.

    .venv/bin/python bench/cluster_scale.py [--runs 3] [--jobs 10000] [--results]

The clusters are the test suite's (tests/support/cluster.py) on local ports, the single
Redis a node of the same kind without cluster mode.
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
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import DONE_FILE, Workers, replace_section, worker_env  # noqa: E402
from rqconc import Queue  # noqa: E402
from rqconc.cli.cluster import suggestions  # noqa: E402
from rqconc.connection.clients import connect  # noqa: E402
from tests.support.cluster import RedisClusterProcesses  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402

QUEUE = "bench"
# Two no-op tasks: "quiet" touches no Redis (one byte appended to a file, counted by the
# file's size), so a run measures rqconc's own work on each deployment, the SPEC row; "incr"
# does one INCR in its namespace's slot through a client of the deployment's kind (redis-py's
# RedisCluster on the cluster), as a user's task would.
TASKS = {"quiet": "bench.tasks:quiet", "incr": "bench.cluster_tasks:count"}
BATCH = 1000
RUN_LIMIT = 60.0  # s: a run slower than this is a failure, not a measurement


def counter(namespace: str) -> str:
    return "{" + namespace + "}:bench:done"


def fill(url: str, namespace: str, jobs: int, task: str) -> None:
    queue = Queue(QUEUE, connection=url, namespace=namespace)
    args = (counter(namespace),) if task == "incr" else ()
    for start in range(0, jobs, BATCH):
        size = min(BATCH, jobs - start)
        queue.enqueue_many([(TASKS[task], args)] * size, result_ttl=0)


def one_run(url: str, namespaces: Sequence[str], jobs: int, flush: Any, task: str) -> float:
    """Jobs/s of `jobs` no-op jobs per namespace, one `forking 2` worker per namespace."""
    flush()
    for namespace in namespaces:
        fill(url, namespace, jobs, task)
    client = connect(url)
    workers = Workers()
    with tempfile.TemporaryDirectory() as scratch:
        done_file = Path(scratch) / "done"
        done_file.touch()
        if task == "quiet":
            count = lambda: done_file.stat().st_size  # noqa: E731
        else:
            count = lambda: sum(int(client.get(counter(ns)) or 0) for ns in namespaces)  # noqa: E731
        try:
            for namespace in namespaces:
                argv = [sys.executable, "-m", "bench.cluster_worker", url, namespace]
                workers.start(argv, worker_env(url, {DONE_FILE: str(done_file)}))
            return _rate(count, jobs * len(namespaces), workers)
        finally:
            workers.kill()
            client.close()


def _rate(count: Callable[[], int], target: int, workers: Workers) -> float:
    deadline = time.monotonic() + RUN_LIMIT
    first_time, first_count = 0.0, 0
    while True:
        now = time.perf_counter()
        done = count()
        if done and not first_time:
            first_time, first_count = now, done
        if done >= target:
            return (done - first_count) / max(now - first_time, 1e-6)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{done} of {target} jobs done in {RUN_LIMIT:g} s")
        workers.check_alive()
        time.sleep(0.002)


def measure(runs: int = 3, jobs: int = 10_000) -> Dict[str, Any]:
    """Rates per deployment (lists of jobs/s, one per run) and the 3 namespaces' names.

    Like is compared with like: a cluster's replicas cost its masters (the replication
    stream) and take CPU of their own, which on a small machine comes out of the workers'
    share; so one Redis is compared with a cluster of masters only, and one Redis with a
    replica with the cluster of 3 masters + 3 replicas."""
    single = RedisServer(_binary()).start()
    paired = RedisServer(_binary()).start()
    replica = RedisServer(_binary(), extra_args=("--replicaof", "127.0.0.1", str(paired.port)))
    replica.start()
    bare = RedisClusterProcesses(_binary(), replicas=False).start()
    cluster = RedisClusterProcesses(_binary()).start()
    deployments = {
        "single": (single.url, _flush_single(single)),
        "bare": (bare.url, bare.flushall),
        "paired": (paired.url, _flush_single(paired)),
        "cluster": (cluster.url, cluster.flushall),
    }
    try:
        _wait_synced(paired)
        names = [name for name, _ in suggestions(connect(cluster.url), 3, "ns")]  # type: ignore[arg-type]
        found: Dict[str, Any] = {"namespaces": names}
        for task in TASKS:
            rates: Dict[str, List[float]] = {name: [] for name in [*deployments, "three"]}
            found[task] = rates
            for _ in range(runs):  # alternating, so that a busy moment hits all alike
                for name, (url, flush) in deployments.items():
                    rates[name].append(one_run(url, ["rqconc"], jobs, flush, task))
            for _ in range(runs):  # half as many per namespace: the run lasts as long
                rates["three"].append(
                    one_run(cluster.url, names, jobs // 2, cluster.flushall, task)
                )
        return found
    finally:
        cluster.close()
        bare.close()
        for server in (replica, paired, single):
            server.close()


def _wait_synced(master: RedisServer, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while master.client().info("replication").get("connected_slaves", 0) < 1:
        if time.monotonic() > deadline:
            raise RuntimeError("the single Redis's replica did not connect")
        time.sleep(0.05)


def _binary() -> str:
    from bench.common import redis_binary

    return redis_binary()


def _flush_single(server: RedisServer) -> Any:
    return lambda: server.client().flushall()


def lines(found: Dict[str, Any]) -> List[str]:
    """The results as a Markdown table (and the ratios the SPEC targets), or the error that
    stopped the measurement."""
    if "error" in found:
        return [f"Not measured in this run: {found['error']}"]
    quiet, incr = found["quiet"], found["incr"]

    def cell(rates: List[float]) -> str:
        return f"{statistics.median(rates):,.0f} ({', '.join(f'{r:,.0f}' for r in rates)})"

    table = [
        "| deployment | worker(s) | quiet task: jobs/s, median (runs) | INCR task |",
        "|---|---|---:|---:|",
        *[
            f"| {label} | forking 2 | {cell(quiet[name])} | {cell(incr[name])} |"
            for name, label in DEPLOYMENTS.items()
        ],
        f"| Redis Cluster 3+3, 3 namespaces on 3 masters ({', '.join(found['namespaces'])}), "
        f"sum | 3 x forking 2 | {cell(quiet['three'])} | {cell(incr['three'])} |",
        "",
    ]
    for cluster, single in (("bare", "single"), ("cluster", "paired")):
        ratios = [
            statistics.median(rates[cluster]) / statistics.median(rates[single])
            for rates in (quiet, incr)
        ]
        verdict = "meets" if ratios[0] >= 0.85 else "MISSES"
        table.append(
            f"- {DEPLOYMENTS[cluster]}: {ratios[0]:.0%} of {DEPLOYMENTS[single]} with the quiet "
            f"task (SPEC 13: within 15%: {verdict} it); {ratios[1]:.0%} with the INCR task."
        )
    return table


DEPLOYMENTS = {
    "single": "one Redis",
    "bare": "Redis Cluster of 3 masters (no replicas), one namespace",
    "paired": "one Redis with one replica",
    "cluster": "Redis Cluster 3+3, one namespace",
}


BEGIN, END = "<!-- cluster-scale:begin -->", "<!-- cluster-scale:end -->"


def write_section(found: Dict[str, Any]) -> None:
    """The scale-out table, between its markers in bench/RESULTS.md."""
    text = [
        BEGIN,
        "## Scale-out: one namespace on a Redis Cluster, and 3 namespaces on 3 masters",
        "",
        "`bench/cluster_scale.py` (SPEC 13), in the same run as the table above; no-op jobs, "
        "10,000 (5,000 per namespace with 3).",
        "",
        *lines(found),
        END,
    ]
    replace_section(BEGIN, END, "\n".join(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md's table")
    args = parser.parse_args()
    began = time.monotonic()
    found = measure(args.runs, args.jobs)
    print("\n".join(lines(found)))
    if args.results and found:
        write_section(found)
    print(f"({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
