"""Throughput and run times per queue, from the per-minute metrics that the Lua steps keep
(rqconc/metrics/read.py): exact across every worker, and O(minutes) to read whatever the
queue lengths.

"The last minute" is the last complete one: the current minute is still filling, and a rate
that drops to zero at each minute's start would mislead at a glance. The chart shows it too.
"""

from __future__ import annotations

from typing import Any, Dict, List

import redis

from rqconc.metrics.read import MinutePoint
from rqconc.metrics.read import timeline as minute_points


def _as_dict(point: MinutePoint) -> Dict[str, Any]:
    return {
        "minute": point.minute,
        "finished": point.finished,
        "failed": point.failed,
        "run_p50": point.run_p50,
        "run_p95": point.run_p95,
    }


def queue_rates(client: redis.Redis, namespace: str, names: List[str]) -> Dict[str, Dict[str, Any]]:
    """{queue: finished and failed in the last complete minute, its run-time p50 and p95}."""
    rates = {}
    for name in names:
        last_full = minute_points(client, namespace, name, minutes=2)[0]
        rates[name] = {
            "finished_last_minute": last_full.finished,
            "failed_last_minute": last_full.failed,
            "run_p50": last_full.run_p50,
            "run_p95": last_full.run_p95,
        }
    return rates


def timeline(client: redis.Redis, namespace: str) -> List[Dict[str, Any]]:
    """The last hour of every queue together, a point per minute, oldest first."""
    return [_as_dict(point) for point in minute_points(client, namespace, None, minutes=60)]
