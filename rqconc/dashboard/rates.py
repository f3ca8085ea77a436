"""Throughput and run times per queue, from the metrics that the Lua steps keep."""

from __future__ import annotations

from typing import Any, Dict, List

import redis


def queue_rates(client: redis.Redis, namespace: str, names: List[str]) -> Dict[str, Dict[str, Any]]:
    return {}


def timeline(client: redis.Redis, namespace: str) -> List[Dict[str, Any]]:
    return []
