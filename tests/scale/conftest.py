"""The deployments the queue, lifecycle and CLI behaviours run against besides one Redis
(SPEC section 8): each is started once per test process and flushed before every test.

The existing tests take their Redis from the fixtures `redis_server` (`.url`, `.client()`),
`redis_url` and `client`; here those names yield the deployment instead, so a test module
under tests/scale/ that imports existing test functions runs them, unchanged, against each
deployment in DEPLOYMENTS.
"""

import functools
import itertools

import pytest
from redis.cluster import RedisCluster

from rqconc.connection.clients import connect
from tests.support.cluster import RedisClusterProcesses
from tests.support.sentinel import SentinelDeployment

DEPLOYMENTS = ["cluster", "sentinel"]
# Every backend runs the worker tests on one Redis already: here they run on `forking`, and
# the shutdown promises on one in-process backend too, to keep the deployments' share of the
# suite short.
BACKENDS_HERE = {"forking"}
TWO_BACKENDS = {
    "test_the_worker_registers_heartbeats_and_a_warm_shutdown_loses_nothing_and_leaves_it": {
        "forking",
        "threading",
    },
    "test_cold_shutdown_puts_running_jobs_back_at_the_front_without_an_attempt": {
        "forking",
        "threading",
    },
}


def pytest_collection_modifyitems(config, items):
    here = [i for i in items if "tests/scale/" in i.nodeid]
    dropped = [
        i
        for i in here
        if _backend(i) not in (None, *TWO_BACKENDS.get(i.originalname, BACKENDS_HERE))
    ]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if i not in dropped]


def _backend(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("backend") if callspec else None


class ClusterDeployment:
    """A 3-master + 3-replica Redis Cluster, seen as the tests see a `RedisServer`."""

    name = "cluster"

    def __init__(self, processes: RedisClusterProcesses) -> None:
        self.processes = processes

    @property
    def url(self) -> str:
        return self.processes.url

    def client(self):
        """A cluster client on which KEYS, as tests use it, asks every master (a cluster
        client's own KEYS asks one node)."""
        client = connect(self.url)
        client.keys = functools.partial(client.keys, target_nodes=RedisCluster.PRIMARIES)
        return client

    def flush(self) -> None:
        self.processes.flushall()


class SentinelTestDeployment:
    """A 1-master, 1-replica, 3-sentinel group (tests/support/sentinel.py). Each flush moves
    to a database of its own: a worker an earlier test ended may still finish its last take
    for a moment, on its own database."""

    name = "sentinel"

    def __init__(self, group: SentinelDeployment) -> None:
        self.group = group
        self.databases = itertools.count(1)
        self.db = 0

    @property
    def url(self) -> str:
        return self.group.url.rsplit("/", 1)[0] + f"/{self.db}"

    def client(self):
        return connect(self.url)

    def flush(self) -> None:
        self.db = next(self.databases) % 16
        self.client().flushdb()


@pytest.fixture(scope="session")
def sentinel_group(redis_binary):
    group = SentinelDeployment(redis_binary).start()
    yield group
    group.close()


@pytest.fixture(scope="session")
def cluster_processes(redis_binary):
    cluster = RedisClusterProcesses(redis_binary).start()
    yield cluster
    cluster.close()


@pytest.fixture(scope="session", params=DEPLOYMENTS)
def deployment(request):
    if request.param == "cluster":
        return ClusterDeployment(request.getfixturevalue("cluster_processes"))
    if request.param == "sentinel":
        return SentinelTestDeployment(request.getfixturevalue("sentinel_group"))
    raise ValueError(f"unknown deployment {request.param!r}")


@pytest.fixture
def redis_server(deployment):
    deployment.flush()
    return deployment


@pytest.fixture
def redis_url(redis_server):
    return redis_server.url


@pytest.fixture
def client(redis_server):
    client = redis_server.client()
    yield client
    client.close()
