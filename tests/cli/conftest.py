"""This directory's tests start processes (commands, workers): they run on one Redis version,
whose steps tests/store and tests/queue already run on every version (tests/conftest.py)."""

import pytest


@pytest.fixture
def redis_url(one_redis_url):
    return one_redis_url
