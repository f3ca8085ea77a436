"""Redis' clock for the times workers compare with one another's.

Leases and deadlines read TIME inside their Lua steps (lua/include/clock.lua). The worker
registry's heartbeat scores and the cron leader's "now" are compared across hosts too: read
with the local clock, a worker whose clock is ahead would drop the others from the listing
(or fire cron ticks early), and one that lags would be dropped itself. One TIME round trip
per heartbeat or scheduler tick keeps them on the one clock every worker shares.
"""

from __future__ import annotations

from typing import Any

import redis


def redis_time(client: redis.Redis) -> float:
    """Redis' time, in seconds since the epoch."""
    reply: Any = client.time()
    if isinstance(reply, dict):  # a cluster client asks every node: any one will do
        reply = next(iter(reply.values()))
    seconds, micros = reply
    return int(seconds) + int(micros) / 1_000_000


def redis_time_ms(client: redis.Redis) -> int:
    """Redis' time, in whole ms since the epoch (the registry's scores)."""
    return int(redis_time(client) * 1000)
