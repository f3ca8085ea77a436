"""The no-op task of bench/cluster_scale.py: one INCR of a counter the job names, on the
server (or cluster master) that holds it, through a client made once per process."""

import os
from typing import Any, Optional

from rqconc.connection.clients import connect

_client: Optional[Any] = None


def count(key: str) -> None:
    global _client
    if _client is None:
        _client = connect(os.environ["BENCH_REDIS_URL"])
    _client.incr(key)
