"""Throughput and run times per queue, from the per-minute metrics that the Lua steps keep
(rqconc/metrics/read.py): exact across every worker, and O(minutes) to read whatever the
queue lengths.

"The last minute" is a sliding 60 s: the current minute so far, plus the previous minute for
the share of it still inside the window (a rate that dropped to zero at each minute's start
would mislead at a glance). The run-time quantiles are those of whichever of the two minutes
weighs more in the window: quantiles of two minutes cannot be added.
"""

from __future__ import annotations

from typing import Any, Dict, List

import redis

from rqconc.metrics.read import MinutePoint
from rqconc.metrics.read import timeline as minute_points
from rqconc.store.clock import redis_time
from rqconc.store.keys import KeySpace


def _as_dict(point: MinutePoint) -> Dict[str, Any]:
    return {
        "minute": point.minute,
        "finished": point.finished,
        "failed": point.failed,
        "run_p50": point.run_p50,
        "run_p95": point.run_p95,
    }


def queue_rates(client: redis.Redis, namespace: str, names: List[str]) -> Dict[str, Dict[str, Any]]:
    """{queue: finished and failed over the last 60 s, and run-time p50 and p95}."""
    rates = {}
    now = redis_time(client, KeySpace(namespace))
    for name in names:
        previous, current = minute_points(client, namespace, name, minutes=2)
        share = max(0.0, 1.0 - (now - current.minute) / 60)  # of the previous minute
        weighted = previous.finished * share
        times = previous if weighted > current.finished else current
        rates[name] = {
            "finished_last_minute": round(weighted + current.finished),
            "failed_last_minute": round(previous.failed * share + current.failed),
            "run_p50": times.run_p50,
            "run_p95": times.run_p95,
        }
    return rates


def timeline(client: redis.Redis, namespace: str) -> List[Dict[str, Any]]:
    """The last hour of every queue together, a point per minute, oldest first."""
    return [_as_dict(point) for point in minute_points(client, namespace, None, minutes=60)]
