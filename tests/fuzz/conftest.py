"""Hypothesis profiles for the fuzz suite, and the long-lived worker it feeds.

`make test` runs the small default profile (the whole suite adds well under 60 s); `make fuzz`
selects HYPOTHESIS_PROFILE=deep. No example database is written (the tree stays clean); a
failure prints the blob that replays it.
"""

import os
import time

import pytest
from hypothesis import HealthCheck, Phase, settings

from tests.support.redis_server import RedisServer
from tests.support.worker_process import redis_worker

_COMMON = dict(
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
# No shrinking in make test: a failing example is reported as found, within the time limit.
settings.register_profile(
    "default", max_examples=25, phases=[Phase.explicit, Phase.reuse, Phase.generate], **_COMMON
)
settings.register_profile("deep", max_examples=400, **_COMMON)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
settings.load_profile(PROFILE)
# Time limit of each property test (pytest-timeout's 60 s suits the small profile): the deep
# one runs 16 times the examples and shrinks a failure for up to 300 s (hypothesis' own cap),
# each shrink step replaying an example that may wait 15 s on a job.
PROPERTY_TIMEOUT = 600 if PROFILE == "deep" else 60


@pytest.fixture(scope="module")
def fuzz_redis(redis_binary):
    server = RedisServer(redis_binary).start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def fuzz_workers(fuzz_redis, tmp_path_factory):
    """A forking and a threading worker on queue `fuzz`, for the whole module."""
    tmp = tmp_path_factory.mktemp("fuzz-workers")
    workers = [
        redis_worker(backend, 2, fuzz_redis.url, tmp, "-q", "fuzz", "--log-level", "INFO")
        for backend in ("forking", "threading")
    ]
    deadline = time.monotonic() + 20
    client = fuzz_redis.client()
    while len(client.keys("{rqconc}:worker:*")) < len(workers):
        assert time.monotonic() < deadline, [w.output()[-2000:] for w in workers]
        time.sleep(0.05)
    yield workers
    for worker in workers:
        worker.close()
