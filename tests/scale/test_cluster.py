"""SPEC section 8 on a real 3-master + 3-replica Redis Cluster: a RedisCluster client is
accepted where a URL is, namespaces are the unit of placement, and `rqconc cluster slots`
tells where each one lives and which names land on different masters."""

import json
import time

import pytest
from redis.cluster import RedisCluster
from redis.crc import key_slot

from bench.cluster_scale import counter, one_run
from rqconc import Queue
from rqconc.connection.clients import connect
from rqconc.store.keys import KeySpace
from rqconc.worker.redis_supervisor import Supervisor
from tests.cli.test_commands import assert_one_line_error, ok, ok_process, rqconc
from tests.support.waiting import wait_for


@pytest.fixture
def cluster(cluster_processes):
    cluster_processes.flushall()
    return cluster_processes


def master_port(cluster, namespace):
    return cluster.master_of_slot(key_slot(KeySpace(namespace).seq.encode())).port


def test_a_redis_cluster_client_is_accepted_by_queue_and_supervisor(cluster):
    seed = cluster.nodes[0]
    client = RedisCluster(host="127.0.0.1", port=seed.port)
    queue = Queue("embedded", connection=client)
    sup = Supervisor("threading", 2, ["embedded"], connection=client, allow=["tests"])
    sup.start()
    try:
        jobs = [queue.enqueue("tests.worker.jobs:add", n, 1) for n in range(5)]
        assert [job.get(timeout=20) for job in jobs] == [1, 2, 3, 4, 5]
    finally:
        sup.stop()
    wait_for(lambda: sup.state.value == "stopped", timeout=15, message="supervisor stopped")


def test_cluster_slots_prints_the_master_serving_each_known_namespace(cluster):
    for namespace in ("alpha", "rqconc"):
        Queue("default", connection=cluster.url, namespace=namespace).enqueue(
            "tests.worker.jobs:add", 1, 2
        )
    shown = json.loads(
        ok("cluster", "slots", "--namespace", "unused", "--json", "--url", cluster.url)
    )
    rows = {row["namespace"]: row for row in shown["namespaces"]}
    assert set(rows) == {"alpha", "rqconc", "unused"}
    for name, row in rows.items():
        assert row["slot"] == key_slot(KeySpace(name).seq.encode())
        assert row["master"] == f"127.0.0.1:{master_port(cluster, name)}"
        assert len(row["replicas"]) == 1
    assert rows["alpha"]["keys"] > 0 and rows["unused"]["keys"] == 0
    assert len(shown["masters"]) == 3

    text = ok_process("cluster", "slots", "--url", cluster.url)  # the real command, once
    assert text.splitlines()[0].split() == ["NAMESPACE", "SLOT", "MASTER", "REPLICAS", "KEYS"]
    assert "alpha" in text and "of 3 masters" in text


def test_suggested_names_land_on_different_masters_and_their_keys_stay_there(cluster):
    shown = json.loads(ok("cluster", "slots", "--suggest", "3", "--json", "--url", cluster.url))
    names = [row["namespace"] for row in shown]
    assert len({row["master"] for row in shown}) == 3
    for name in names:
        Queue("q", connection=cluster.url, namespace=name).enqueue("tests.worker.jobs:add", 1, 2)
    # Each master holds exactly the keys of the namespace suggested for it.
    for row in shown:
        port = int(row["master"].rsplit(":", 1)[1])
        node = next(n for n in cluster.nodes if n.port == port)
        held = {k.decode() for k in cluster.client(node).keys("*")}
        assert held and all(k.startswith("{" + row["namespace"] + "}:") for k in held), held
    assert [r["namespace"] for r in shown] == names  # stable: the same names each time
    again = json.loads(ok("cluster", "slots", "--suggest", "3", "--json", "--url", cluster.url))
    assert again == shown


def test_cluster_slots_misuse_and_an_unreachable_cluster_are_one_line(cluster):
    assert_one_line_error(rqconc("cluster", "slots", "--url", "redis://127.0.0.1:1/0"), 2)
    assert_one_line_error(rqconc("cluster", "slots", "--suggest", "0", "--url", cluster.url), 2)
    bad_name = rqconc("cluster", "slots", "--namespace", "a{b", "--url", cluster.url)
    assert_one_line_error(bad_name, 2)
    started = time.monotonic()
    down = rqconc("cluster", "slots", "--url", "redis+cluster://:hunter2@127.0.0.1:1,127.0.0.1:2")
    assert_one_line_error(down, 1)
    assert "hunter2" not in down.stderr and "127.0.0.1:1" in down.stderr
    assert time.monotonic() - started < 15


def test_the_scale_out_benchmark_counts_every_job_of_each_namespace(cluster):
    names = ["bench-a", "bench-b"]
    rate = one_run(cluster.url, names, 200, cluster.flushall, "incr")
    client = connect(cluster.url)
    assert rate > 0
    assert [int(client.get(counter(name))) for name in names] == [200, 200]
    # The quiet task touches no Redis: its jobs are counted by the bytes of a file.
    assert one_run(cluster.url, names, 200, cluster.flushall, "quiet") > 0
    assert [int(client.get(counter(name)) or 0) for name in names] == [0, 0]
