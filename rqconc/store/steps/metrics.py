"""The Lua step behind the per-minute metrics timeline (lua/metrics_mark.lua): a copy of the
namespace's finished-run and failure totals as they stood when each minute began, asked for
by every worker's supervisor (worker/presence.py) and read by rqconc/metrics/read.py. Beside
steps.py, which holds the job lifecycle's steps and is the only other caller of scripts."""

from __future__ import annotations

import redis

from rqconc.store.keys import KeySpace
from rqconc.store.scripts import script


def mark_metrics_minute(client: redis.Redis, keys: KeySpace) -> bool:
    """Copy the totals for this minute (Redis' clock) unless it has its copy; True if it
    copied."""
    return bool(script("metrics_mark")(client, [keys.metrics], [keys.prefix]))
