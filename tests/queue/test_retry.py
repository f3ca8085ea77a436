"""SPEC section 7, Retry: the delay formula, jitter, what is retried, how it is stored."""

import random

import pytest

from rqconc.errors import ConnectionError as RQConnectionError
from rqconc.errors import JobTimeout, WorkerLost
from rqconc.queue.retry import Retry, default_policy, policy_of
from rqconc.queue.serialization import mro_names
from tests.queue import tasks


def test_the_delay_before_rerun_n_is_backoff_times_factor_to_n_minus_1_capped():
    retry = Retry(max=10, backoff=2.0, factor=3.0, max_delay=100, jitter=False)
    assert [retry.delay(n) for n in range(1, 6)] == [2.0, 6.0, 18.0, 54.0, 100.0]
    assert Retry(backoff=1, factor=2, max_delay=3600).base_delay(10_000) == 3600


def test_jitter_draws_between_half_and_all_of_the_delay():
    random.seed(7)
    retry = Retry(backoff=8.0, factor=1.0, jitter=True)
    draws = [retry.delay(1) for _ in range(500)]
    assert all(4.0 <= d <= 8.0 for d in draws) and max(draws) - min(draws) > 3


def test_retry_max_allows_n_reruns_after_the_first_execution():
    retry = Retry(max=2, jitter=False)
    exc = mro_names(ValueError)
    assert retry.next_delay(exc, attempts=1) == 2.0
    assert retry.next_delay(exc, attempts=2) == 4.0
    assert retry.next_delay(exc, attempts=3) is None


def test_retry_without_on_retries_every_exception_but_job_timeout():
    retry = Retry()
    assert retry.matches(mro_names(ValueError)) and retry.matches(mro_names(tasks.Flaky))
    assert not retry.matches(mro_names(JobTimeout))
    assert not retry.matches(mro_names(KeyboardInterrupt))
    assert Retry(on=[JobTimeout]).matches(mro_names(JobTimeout))


def test_on_matches_subclasses_by_their_class_hierarchy():
    retry = Retry(on=[OSError])
    assert retry.matches(mro_names(ConnectionRefusedError))
    assert not retry.matches(mro_names(ValueError))


@pytest.mark.parametrize(
    "exc", [ConnectionError, ConnectionResetError, TimeoutError, WorkerLost, RQConnectionError]
)
def test_the_default_policy_retries_transient_errors_7_times(exc):
    policy = policy_of(None)
    assert policy.max == 7 and policy.matches(mro_names(exc))
    assert policy.next_delay(mro_names(exc), attempts=7) is not None
    assert policy.next_delay(mro_names(exc), attempts=8) is None


@pytest.mark.parametrize("exc", [ValueError, JobTimeout, KeyError])
def test_the_default_policy_does_not_retry_other_errors(exc):
    assert not default_policy().matches(mro_names(exc))


def test_the_default_policy_covers_installed_client_libraries():
    import redis.exceptions

    assert default_policy().matches(mro_names(redis.exceptions.TimeoutError))


def test_a_retry_is_stored_as_json_with_qualified_exception_names():
    retry = Retry(
        max=3,
        backoff=1,
        factor=3,
        max_delay=60,
        jitter=False,
        on=[ValueError, tasks.Flaky, "myapp.errors.Flaky"],
    )
    assert retry.to_dict()["on"] == ["ValueError", "tests.queue.tasks.Flaky", "myapp.errors.Flaky"]
    assert Retry.from_json(retry.to_json()) == retry


@pytest.mark.parametrize(
    "kwargs", [{"max": -1}, {"max": 1.5}, {"backoff": -1}, {"on": [42]}, {"on": [int]}]
)
def test_bad_retry_arguments_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        Retry(**kwargs)
