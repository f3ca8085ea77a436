"""SPEC section 8 on a Redis Cluster: namespaces `a` and `b` live on different masters (slots
15495 and 3300 of a 3-master cluster), and one worker of `--namespace a,b` serves both, with
warm and cold shutdown, through its connection to each master. The tests are those of
tests/worker/test_namespaces.py, imported unchanged: tests/scale/conftest.py hands them the
cluster where they ask for a Redis."""

import pytest
from redis.crc import key_slot

from tests.scale.conftest import ClusterDeployment
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
