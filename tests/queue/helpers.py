"""Helpers shared by the queue tests (fixtures live in conftest.py)."""

import redis

from tests.support.waiting import wait_for  # noqa: F401 - shared with the queue tests


def take_and_run(source, claim="claim", timeout=1.0):
    """Take one job through `source` and perform it; the WorkItem (None if nothing came)."""
    item = source.take(claim, timeout)
    if item is not None:
        source.perform(item)
    return item


class CountingConnection(redis.Connection):
    """A real connection that counts its round trips (one per packed command sent)."""

    sent = 0

    def send_packed_command(self, command, check_health=True):
        CountingConnection.sent += 1
        return super().send_packed_command(command, check_health)


def counting_client(url):
    CountingConnection.sent = 0
    pool = redis.ConnectionPool.from_url(url, connection_class=CountingConnection)
    return redis.Redis(connection_pool=pool)
