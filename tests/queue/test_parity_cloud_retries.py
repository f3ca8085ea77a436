"""SPEC section 14: the default retry policy retries botocore's transient errors, where
botocore is installed (the test extras install the real one)."""

import importlib
import sys

import pytest

from rqconc.queue.job import JobStatus
from rqconc.queue.queue import Queue
from rqconc.queue.retry import TRANSIENT_CLIENT_ERROR, default_policy, failure_names
from tests.support.waiting import wait_for

TASK = "tests.queue.parity_tasks:fail_once"


@pytest.fixture
def botocore():
    yield importlib.import_module("botocore.exceptions")
    # The policy looks at botocore only once it is loaded: unload it for the next test.
    for name in [name for name in sys.modules if name.split(".")[0] == "botocore"]:
        sys.modules.pop(name, None)


def client_error(exceptions, code, status):
    response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return exceptions.ClientError(response, "PutObject")


@pytest.mark.parametrize(
    "code, status, retried",
    [
        ("Throttling", 400, True),
        ("ThrottlingException", 400, True),
        ("SlowDown", 503, True),
        ("InternalError", 500, True),
        ("SomethingNew", 502, True),
        ("AccessDenied", 403, False),
        ("NoSuchKey", 404, False),
    ],
)
def test_a_client_error_is_retried_by_default_when_throttled_or_5xx(
    botocore, code, status, retried
):
    names = failure_names(client_error(botocore, code, status))
    assert default_policy().matches(names) is retried
    assert (TRANSIENT_CLIENT_ERROR in names) is retried


def test_botocore_connection_and_read_timeouts_are_retried_by_default(botocore):
    policy = default_policy()
    for name in ("ConnectTimeoutError", "ReadTimeoutError", "EndpointConnectionError"):
        exc = getattr(botocore, name)(endpoint_url="https://s3.example")
        assert policy.matches(failure_names(exc)), name
    assert not policy.matches(failure_names(botocore.BotoCoreError()))


def test_without_botocore_loaded_the_default_policy_names_none_of_it():
    assert "botocore.exceptions" not in sys.modules
    assert TRANSIENT_CLIENT_ERROR not in default_policy().on


@pytest.mark.parametrize("backend", ["forking", "threading"])
def test_a_worker_retries_a_throttled_call_and_fails_a_denied_one_for_good(
    botocore, redis_url, start_worker, tmp_path, backend
):
    q = Queue("aws", connection=redis_url)
    throttled = q.enqueue(TASK, str(tmp_path / "a"), "ClientError", "Throttling", 400)
    timed_out = q.enqueue(TASK, str(tmp_path / "b"), "ReadTimeoutError")
    denied = q.enqueue(TASK, str(tmp_path / "c"), "ClientError", "AccessDenied", 403)
    # CI runs saw attempts == 3 here, with one lost lease: the forking run just before had left
    # a dying child blocked on this queue's marker, whose pipelined take leased the first job
    # (start_worker's close now waits for every process; tests/worker/test_worker_harness.py).
    worker = start_worker(backend, 2, redis_url, "-q", "aws", "--preload", "botocore.exceptions")
    # The default policy's first re-run waits 1 to 2 s (backoff 2 s, jittered).
    assert throttled.get(timeout=60) == "ok" and timed_out.get(timeout=60) == "ok"
    for job in (throttled, timed_out):  # on a mismatch: how the extra attempt ended
        assert job.attempts == 2, (
            job.attempts,
            job.lost,
            job.exc_info and job.exc_info[:2],
            worker.output()[-6000:],
        )
    wait_for(lambda: denied.refresh() or denied.status is JobStatus.FAILED, timeout=30)
    assert denied.attempts == 1
    assert denied.exc_info[0] == "botocore.exceptions.ClientError"
