"""The scale-out deployments (SPEC section 8): existing behaviours run against each.

`deployment` is parametrized by kind ("sentinel" here; the cluster's kind is added the same
way), one started per test process. Inside tests/scale/, the fixtures every queue, CLI and
worker test is written against (`redis_url`, `redis_server`, `client`, ...) point at that
deployment, so tests/scale/test_*_on_deployments.py import the existing tests themselves and
pytest runs them again here: one behaviour, one test, run on every deployment.
"""

from __future__ import annotations

import itertools

import pytest

from rqconc.connection.clients import connect
from tests.queue.conftest import keys, make_source, queue, source, steps  # noqa: F401
from tests.support.sentinel import SentinelDeployment

DEPLOYMENTS = ["sentinel"]


def start_deployment(kind: str, binary: str) -> SentinelDeployment:
    if kind == "sentinel":
        return SentinelDeployment(binary).start()
    raise ValueError(f"unknown deployment {kind!r}")


@pytest.fixture(scope="session", params=DEPLOYMENTS)
def deployment(request, redis_binary):
    """One running deployment per kind and test process; tests must leave it running (a
    test that kills a node starts its own deployment)."""
    started = start_deployment(request.param, redis_binary)
    yield started
    started.close()


class DeploymentServer:
    """What tests use of a `redis_server`: its URL and a client."""

    def __init__(self, url: str) -> None:
        self.url = url

    def client(self):
        return connect(self.url)


_databases = itertools.count(1)


@pytest.fixture
def redis_url(deployment):
    """The deployment's URL on a database of this test's own, flushed: a worker an earlier
    test ended may still be finishing its last take for a moment, on its own database."""
    url = deployment.url.rsplit("/", 1)[0] + f"/{next(_databases) % 16}"
    connect(url).flushdb()
    return url


@pytest.fixture
def redis_server(redis_url):
    return DeploymentServer(redis_url)


@pytest.fixture
def client(redis_url):
    client = connect(redis_url)
    yield client
    client.close()
