"""rqconc.aio through a Redis Cluster URL (SPEC 8 and 15) on a real 3-master cluster: many
coroutines enqueueing at once through one fresh client, by `AsyncQueue.enqueue` and by a
task's `aenqueue`, all land and their results come back.

Before rqconc/connection/aio.py's `ready`, 20 such coroutines failed ("Error UNKNOWN while
writing to socket. Connection lost."): redis-py's asyncio RedisCluster routed the first
commands of a client that had not learned the slots yet to random primaries, and its
reaction to their MOVED replies closed the other coroutines' connections.
"""

import asyncio

import pytest
from redis.asyncio import RedisCluster
from redis.crc import key_slot

import rqconc
from rqconc.aio import AsyncQueue
from rqconc.store.keys import KeySpace
from rqconc.worker.redis_supervisor import Supervisor
from tests.aio import tasks
from tests.support.waiting import wait_for

COROUTINES, EACH = 100, 20
NAMESPACES = ("a", "b")  # on different masters (tests/scale/test_namespaces_on_cluster.py)


@pytest.fixture
def cluster(cluster_processes):
    cluster_processes.flushall()
    return cluster_processes


async def results_of(jobs):
    return [await job.get(timeout=120) for job in jobs]


def run_through(cluster, how, worker):
    """COROUTINES coroutines (half per namespace) of EACH enqueues each, through one fresh
    client per namespace; then the jobs waiting per namespace; then `worker` starts and
    each coroutine awaits its jobs' results, in the same loop (a client is its loop's)."""

    def enqueuer(namespace):
        if how == "aenqueue":
            task = tasks.double.options(connection=cluster.url, namespace=namespace)
            return lambda i: task.aenqueue(i)
        queue = AsyncQueue("aio", cluster.url, namespace=namespace)
        return lambda i: queue.enqueue(tasks.double, i)

    async def producer(enqueue, n):
        return [await enqueue(n * EACH + i) for i in range(EACH)]

    async def main():
        enqueues = [enqueuer(namespace) for namespace in NAMESPACES]
        done = await asyncio.gather(
            *(producer(enqueues[n % 2], n) for n in range(COROUTINES)), return_exceptions=True
        )
        failed = [result for result in done if isinstance(result, BaseException)]
        assert failed == []
        queues = [AsyncQueue("aio", cluster.url, namespace=ns) for ns in NAMESPACES]
        counts = {q.keys.namespace: await q.count() for q in queues}
        await asyncio.to_thread(worker.start)
        results = await asyncio.gather(*(results_of(jobs) for jobs in done))
        return done, counts, results

    return asyncio.run(main())


@pytest.mark.parametrize("how", ["enqueue", "aenqueue"])
def test_100_coroutines_enqueue_through_a_cluster_url_and_every_job_lands(cluster, how):
    slots = {key_slot(KeySpace(ns).seq.encode()) for ns in NAMESPACES}
    assert len({cluster.master_of_slot(slot).port for slot in slots}) == 2
    sup = Supervisor(
        "threading", 8, ["aio"], connection=cluster.url, namespace=NAMESPACES, allow=["tests"]
    )
    try:
        done, counts, results = run_through(cluster, how, sup)
    finally:
        sup.stop()
    wait_for(lambda: sup.state.value == "stopped", timeout=15, message="supervisor stopped")
    assert counts == {ns: COROUTINES // 2 * EACH for ns in NAMESPACES}
    assert len({job.id for jobs in done for job in jobs}) == COROUTINES * EACH
    for n, returned in enumerate(results):
        assert returned == [2 * (n * EACH + i) for i in range(EACH)]


def test_150_coroutines_wait_for_results_on_one_namespace_through_a_cluster_url(cluster):
    """More waiters on one master than redis-py's 100 connections per node: rqconc's async
    Cluster client has no cap of its own, as its client for one Redis has none."""
    sup = Supervisor("threading", 4, ["aio"], connection=cluster.url, allow=["tests"])

    async def main():
        queue = AsyncQueue("aio", cluster.url)
        jobs = await asyncio.gather(*(queue.enqueue(tasks.double, i) for i in range(150)))
        await asyncio.to_thread(sup.start)
        return await asyncio.gather(*(job.get(timeout=120) for job in jobs))

    try:
        assert asyncio.run(main()) == [2 * i for i in range(150)]
    finally:
        sup.stop()
    wait_for(lambda: sup.state.value == "stopped", timeout=15, message="supervisor stopped")


def test_a_cluster_clients_exhausted_pool_is_a_one_line_error_naming_the_cap(cluster):
    async def main():
        seed = cluster.nodes[0]
        client = RedisCluster(host="127.0.0.1", port=seed.port, max_connections=1)
        queue = AsyncQueue("aio", client)
        done = await asyncio.gather(
            *(queue.enqueue(tasks.double, i) for i in range(20)), return_exceptions=True
        )
        await client.aclose()
        return done

    done = asyncio.run(main())
    failed = [result for result in done if isinstance(result, BaseException)]
    assert failed and all(isinstance(error, rqconc.ConnectionError) for error in failed)
    assert str(failed[0]) == (
        "all 1 connections per node of the Redis Cluster client are in use; pass "
        "connection= a RedisCluster client with a larger max_connections, or use fewer at once"
    )
    assert len(failed) < 20  # the first call got its connection and landed
