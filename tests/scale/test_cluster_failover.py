"""SPEC section 8, failover on a Redis Cluster: the master serving the namespace is
SIGKILLed while workers run; the cluster promotes its replica; the workers, never restarted
and keeping their children, take and finish jobs again within 10 s of the promotion, and
client calls meanwhile raise rqconc.ConnectionError within 15 s instead of hanging."""

import json
import signal
import threading
import time

import pytest
from redis.crc import key_slot

from rqconc import ConnectionError as RQConcConnectionError
from rqconc import Job, JobStatus, Queue
from rqconc.store.keys import KeySpace
from tests.cli.test_commands import ok
from tests.support.cluster import RedisClusterProcesses
from tests.support.waiting import wait_for

BACKENDS = ("forking", "threading")  # one worker of each, each on its own queue


@pytest.fixture
def own_cluster(redis_binary):
    cluster = RedisClusterProcesses(redis_binary).start()
    yield cluster
    cluster.close()


def is_master(cluster, node):
    try:
        return cluster.client(node).info("replication")["role"] == "master"
    except OSError:
        return False


class Prober(threading.Thread):
    """Calls the cluster through one Queue, as an application would, every 0.2 s; records
    how long each call took and how it ended."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.queue = Queue("probe", connection=url)
        self.calls = []  # (started, seconds, outcome)
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                self.queue.enqueue("tests.worker.jobs:add", 1, 1)
                outcome = "ok"
            except RQConcConnectionError:
                outcome = "ConnectionError"
            except Exception as exc:  # anything else is what the test must catch
                outcome = f"{type(exc).__name__}: {exc}"
            self.calls.append((started, time.monotonic() - started, outcome))
            self.stop.wait(0.2)


def test_workers_and_clients_find_the_promoted_master_by_themselves(own_cluster, start_worker):
    cluster, url = own_cluster, own_cluster.url
    master = cluster.master_of_slot(key_slot(KeySpace().seq.encode()))
    replica_port = next(
        int(s[3][1])
        for s in cluster.client(master).execute_command("CLUSTER SLOTS")
        if s[2][1] == master.port
    )
    replica = next(n for n in cluster.nodes if n.port == replica_port)
    workers = {b: start_worker(b, 2, url, "-q", f"q-{b}") for b in BACKENDS}
    queues = {b: Queue(f"q-{b}", connection=url) for b in BACKENDS}
    before = [queues[b].enqueue("tests.worker.jobs:add", 1, 2) for b in BACKENDS]
    assert [job.get(timeout=30) for job in before] == [3, 3]
    children = {b: sorted(w.child_pids()) for b, w in workers.items()}
    # A job running across the failover: its completion lands on the promoted master, once.
    across = queues["forking"].enqueue("tests.worker.jobs:nap", 4)
    wait_for(lambda: across.status == JobStatus.STARTED, timeout=15, message="a long job runs")

    prober = Prober(url)
    prober.start()
    killed = time.monotonic()
    master.kill()
    wait_for(lambda: is_master(cluster, replica), timeout=30, message="the replica promoted")
    promoted = time.monotonic()

    # The same Queue objects as before: clients find the new master by themselves.
    after = {}
    for backend in BACKENDS:

        def enqueued(backend=backend):
            try:
                after[backend] = queues[backend].enqueue("tests.worker.jobs:add", 2, 2)
                return True
            except RQConcConnectionError:
                return False

        wait_for(enqueued, timeout=10, interval=0.1, message=f"an enqueue on q-{backend}")
    for backend, job in after.items():
        wait_for(
            lambda job=job: job.status == JobStatus.FINISHED,
            timeout=max(0.1, promoted + 10 - time.monotonic()),
            interval=0.05,
            message=f"the {backend} worker finishing a job within 10 s of the promotion",
        )
        assert job.return_value == 4
    resumed = time.monotonic() - promoted
    wait_for(lambda: across.status == JobStatus.FINISHED, timeout=30, message="the long job")
    fetched = Job.fetch(across.id, connection=url)
    assert fetched.attempts == 1 and fetched.field("lost") in (None, "0"), fetched.field("lost")
    # `rqconc cluster slots` names the promoted replica as the namespace's master now.
    shown = json.loads(ok("cluster", "slots", "--json", "--url", url))
    (row,) = [r for r in shown["namespaces"] if r["namespace"] == "rqconc"]
    assert row["master"] == f"127.0.0.1:{replica.port}", row
    prober.stop.set()
    prober.join(20)

    for backend, worker in workers.items():
        assert worker.process.poll() is None, worker.output()[-2000:]
        assert sorted(worker.child_pids()) == children[backend], "children were replaced"
        assert "Traceback" not in worker.output(), worker.output()[-3000:]
    outcomes = {outcome for _, _, outcome in prober.calls}
    assert outcomes <= {"ok", "ConnectionError"}, outcomes
    slowest = max(seconds for _, seconds, _ in prober.calls)
    assert slowest < 15, prober.calls
    print(
        f"promotion {promoted - killed:.1f} s after the kill; workers resumed within "
        f"{resumed:.1f} s of it; slowest client call {slowest:.2f} s "
        f"({sum(o != 'ok' for _, _, o in prober.calls)} of {len(prober.calls)} refused)"
    )
    for worker in workers.values():
        worker.signal(signal.SIGTERM)
    for worker in workers.values():
        assert worker.wait_exit(15) == 0
