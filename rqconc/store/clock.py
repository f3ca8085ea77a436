"""Redis' clock: the one clock every worker and reader of a namespace compares times on.

Leases, due times and dead-letter expiries are written by the Lua steps, which read TIME
(lua/include/clock.lua) on the server holding the namespace's hash slot. Every time read
from Python that is compared with theirs, or with another host's (the registry's heartbeats,
the cron leader's "now", what has expired), asks that same server: the master owning the
slot of the namespace's hash tag. A cluster client's own TIME would ask whichever node is
its default, maybe another machine with another clock; the local clock of a host that is
ahead would drop live workers from the listing or fire cron ticks early.
"""

from __future__ import annotations

from typing import Any

from rqconc.connection.cluster import is_cluster, master_of
from rqconc.store.keys import KeySpace


def redis_time(client: Any, keys: KeySpace) -> float:
    """TIME of the server holding `keys`' namespace, in seconds since the epoch."""
    if is_cluster(client):
        reply = client.time(target_nodes=master_of(client, keys.seq))
    else:
        reply = client.time()
    if isinstance(reply, dict):  # a cluster client answers by node
        reply = next(iter(reply.values()))
    seconds, micros = reply
    return int(seconds) + int(micros) / 1_000_000


def redis_time_ms(client: Any, keys: KeySpace) -> int:
    """The same, in whole ms since the epoch (the scores of the steps' sorted sets)."""
    return int(redis_time(client, keys) * 1000)


__all__ = ["redis_time", "redis_time_ms"]
