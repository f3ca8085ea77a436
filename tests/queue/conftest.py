import pytest
import redis

from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from rqconc.store.steps.core import Steps
from rqconc.worker.redis_source import RedisSource

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
