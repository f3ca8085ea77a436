import collections
import os

import pytest
import redis

from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import Steps
from rqconc.worker.redis_source import RedisSource
from tests.support.redis_server import RedisServer, bundled_redis_binary, system_redis_binary
from tests.support.waiting import wait_for
from tests.support.worker_process import WorkerProcesses

# Never fall back on a shared Redis (127.0.0.1:6379) by accident.
os.environ.pop("REDIS_URL", None)


def _binaries():
    found = {}
    if system_redis_binary():
        found["redis-system"] = system_redis_binary()
    if bundled_redis_binary():
        found["redis-6.2"] = bundled_redis_binary()
    return found


REDIS_BINARIES = _binaries()

# The files that take longest, longest first (minutes of one test process in a full run).
# `make test` hands out whole files in collection order (--dist loadfile
# --no-loadscope-reorder): these go first, so that none of them is the last file to end while
# the other processes sit idle. The rest follow, those with most tests first (xdist's own
# order without the option). A file missing here is only scheduled later, never skipped.
LONG_FILES = (
    "tests/contrib/django/test_django6.py",  # its first run builds a Python 3.12 venv
    "tests/worker/test_worker_redis.py",
    "tests/engine/test_children.py",
    "tests/scale/test_deployments.py",
    "tests/worker/test_error_replies.py",
    "tests/worker/test_slots.py",
    "tests/connection/test_redis_restart.py",
    "tests/test_docs.py",
    "tests/worker/test_lifecycle.py",
    "tests/worker/test_flow_control.py",
    "tests/worker/test_hooks_every_end.py",
    "tests/worker/test_allow_refusals.py",
    "tests/worker/test_shutdown_without_redis.py",
    "tests/engine/test_shutdown.py",
    "tests/worker/test_thread_children.py",
    "tests/scale/test_sentinel.py",
    "tests/chaos/test_chaos.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    counts = collections.Counter(_file_of(item) for item in items)

    def rank(item):
        path = _file_of(item)
        first = LONG_FILES.index(path) if path in LONG_FILES else len(LONG_FILES)
        return first, -counts[path], path

    items.sort(key=rank)  # stable: a file's own tests keep their order


def _file_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.fixture(scope="session")
def redis_binary():
    """One redis-server binary for tests that need any Redis."""
    return next(iter(REDIS_BINARIES.values()))


@pytest.fixture(scope="session", params=sorted(REDIS_BINARIES))
def redis_versions_server(request):
    """A session-wide server per available Redis binary: queue tests run on each."""
    server = RedisServer(REDIS_BINARIES[request.param]).start()
    yield server
    server.close()


@pytest.fixture
def redis_server(redis_binary):
    """A fresh private server for one test (may be killed or restarted by it)."""
    server = RedisServer(redis_binary).start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def redis_system_server(redis_binary):
    """A session-wide server of the one binary, for tests of processes (CLI commands, workers)
    whose Redis steps the store and queue tests already run on every version."""
    server = RedisServer(redis_binary).start()
    yield server
    server.close()


@pytest.fixture
def redis_url(redis_versions_server):
    """URL of a flushed shared server, once per Redis version: the store's and the queue's
    tests, where a Lua step meets each version's commands."""
    return flushed_url(redis_versions_server)


@pytest.fixture
def one_redis_url(redis_system_server):
    """URL of a flushed shared server of one version: a directory whose tests start processes
    (tests/cli, tests/worker) makes this its `redis_url` — a second version would double
    their minutes and test no Lua step that tests/store and tests/queue do not."""
    return flushed_url(redis_system_server)


def flushed_url(server):
    client = server.client()
    # An earlier test's worker, killed, may still have a marker wait blocked here with its
    # take pipelined behind it: that take would lease this test's first job to a claim nobody
    # renews. Start only once Redis has let go of every such wait (start_worker's close has
    # already waited for those processes to end).
    wait_for(
        lambda: client.info("clients")["blocked_clients"] == 0,
        timeout=15,
        message="the blocked clients of an earlier test to go",
    )
    client.flushall()
    client.close()
    return server.url


@pytest.fixture(autouse=True)
def _rqconc_home(tmp_path, monkeypatch):
    """Keep every test's embedded server and files under its own temporary home."""
    monkeypatch.setenv("RQCONC_HOME", str(tmp_path / "rqconc-home"))


@pytest.fixture
def start_worker(tmp_path):
    """start_worker(BACKEND, SIZE, URL or Spool, *ARGS) runs `python main.py` on that Redis or
    on the fake source; every worker it started is killed at teardown."""
    workers = WorkerProcesses(tmp_path)
    yield workers
    workers.close()


# The store, a queue and a worker's source on the test's Redis: used by the tests of the
# store (tests/store/), the queue (tests/queue/) and the deployments (tests/scale/, whose
# conftest gives `redis_url` and `client` of each deployment).
ALLOW = ["tests.queue.tasks"]


@pytest.fixture
def client(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def keys():
    return KeySpace()


@pytest.fixture
def steps(client, keys):
    return Steps(client, keys)


@pytest.fixture
def queue(redis_url):
    return Queue("default", connection=redis_url)


@pytest.fixture
def make_source(redis_url):
    def make(queues=("default",), **options):
        options.setdefault("allow", ALLOW)
        return RedisSource(redis_url, list(queues), **options)

    return make


@pytest.fixture
def source(make_source):
    return make_source()
