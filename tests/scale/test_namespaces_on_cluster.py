"""SPEC section 8 on a Redis Cluster: namespaces `a` and `b` live on different masters (slots
15495 and 3300 of a 3-master cluster), and one worker of `--namespace a,b` serves both, with
warm and cold shutdown, through its connection to each master. The tests are those of
tests/worker/test_namespaces.py, imported unchanged: tests/scale/conftest.py hands them the
cluster where they ask for a Redis."""

import pytest
from redis.crc import key_slot

from rqconc.connection.pooled import pooled_or_plain
from rqconc.store import functions
from rqconc.store.keys import KeySpace
from rqconc.store.scripts import script
from rqconc.store.steps.core import Steps
from tests.scale.conftest import ClusterDeployment
from tests.store.test_lua_library import libraries
from tests.worker.test_namespaces import (  # noqa: F401
    test_a_cold_shutdown_puts_each_job_back_in_its_own_namespace,
    test_a_worker_of_two_namespaces_runs_jobs_of_both_and_shuts_down_warm,
)


@pytest.fixture
def deployment(cluster_processes):
    """The cluster only (not every deployment of conftest.DEPLOYMENTS): two masters."""
    return ClusterDeployment(cluster_processes)


def test_the_two_namespaces_are_on_different_masters(redis_server):
    slots = {ns: key_slot(("{" + ns + "}").encode()) for ns in ("a", "b")}
    client = redis_server.client()
    masters = {ns: client.nodes_manager.get_node_from_slot(slot).name for ns, slot in slots.items()}
    assert masters["a"] != masters["b"], masters


def test_every_master_that_serves_a_namespace_loads_the_steps_library(redis_server):
    """The steps run as functions on a cluster too (rqconc/store/functions.py): the direct
    connection to the master of a namespace loads the library there on its first step, so a
    namespace on each master loads it on every master, and a master that lost it (FUNCTION
    FLUSH) loads it again (one library a step: a take loads the take's). The cluster
    client's own calls keep EVALSHA."""
    client = redis_server.client()
    masters = client.get_primaries()
    namespaces = {}
    for i in range(1000):
        slot = key_slot(("{" + f"n{i}" + "}").encode())
        namespaces.setdefault(client.nodes_manager.get_node_from_slot(slot).name, f"n{i}")
    assert sorted(namespaces) == sorted(node.name for node in masters)
    client.function_flush()  # every master (redis-py sends it to each primary)
    for node in masters:
        client.get_redis_connection(node).config_resetstat()
    for round_ in range(2):
        for namespace in namespaces.values():
            keys = KeySpace(namespace)
            # A worker child's take: its direct connection to the namespace's master.
            Steps(pooled_or_plain(client, keys.seq), keys).take("c", ["default"], 30_000, "w")
        for node in masters:
            master = client.get_redis_connection(node)
            assert libraries(master) == [script("take").function], node.name
            fcall = master.info("commandstats")["cmdstat_fcall"]
            # Per round, on each master: one take ran as FCALL, after one "Function not
            # found" that loaded its library.
            assert fcall["calls"] - fcall.get("failed_calls", 0) == round_ + 1, fcall
            master.function_flush()  # the next round's enqueue loads it again
    assert not functions.tries_functions(client)
