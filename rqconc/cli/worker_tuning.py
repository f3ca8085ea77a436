"""The worker's tuning options beside its main ones (worker.py): each reads `RQCONC_<LONG
NAME>` from the environment too (env_option); the timings (seconds: registry, take wait,
webhooks, callbacks, replica waits) and the event stream's retention (SPEC 18)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import click

from rqconc.cli.common import replica_options_list
from rqconc.queue.workflow.callbacks import CALLBACK_TIMEOUT, WEBHOOK_TIMEOUT
from rqconc.store.defaults import EVENTS_MAX, EVENTS_RETENTION_SECONDS
from rqconc.worker.event_retention import EventRetention
from rqconc.worker.registry import DEFAULT_TTL
from rqconc.worker.taking import MAX_BLOCK, MIN_BLOCK

# A longer take wait saves nothing worth a stop seen that late.
MAX_TAKE_WAIT = 10.0

ENV_PREFIX = "RQCONC_"


def env_option(*decls: str, **attrs: Any) -> Callable:
    """A click option that also reads `RQCONC_<LONG NAME>` from the environment."""
    long_name = next(d for d in decls if d.startswith("--"))
    attrs.setdefault("envvar", ENV_PREFIX + long_name[2:].upper().replace("-", "_"))
    attrs.setdefault("show_envvar", not attrs.get("hidden", False))
    return click.option(*decls, **attrs)


def timing_options() -> List[Callable]:
    seconds = click.FloatRange(min=0, min_open=True)
    return [
        *replica_options_list(env_option),
        env_option(
            "--worker-ttl",
            type=seconds,
            default=DEFAULT_TTL,
            show_default=True,
            help="Seconds the registry lists a worker whose heartbeat stopped.",
        ),
        env_option(
            "--take-wait",
            type=click.FloatRange(min=MIN_BLOCK, max=MAX_TAKE_WAIT),
            default=MAX_BLOCK,
            show_default=True,
            help="Longest an idle child blocks on its queues: longer means fewer round "
            "trips while idle, and a stop or suspend seen that much later.",
        ),
        env_option(
            "--webhook-timeout",
            type=seconds,
            default=WEBHOOK_TIMEOUT,
            show_default=True,
            help="Seconds one webhook POST may take.",
        ),
        env_option(
            "--callback-timeout",
            type=seconds,
            default=CALLBACK_TIMEOUT,
            show_default=True,
            help="Timeout of on_success/on_failure callbacks and webhook jobs.",
        ),
        *event_options(),
    ]


# A duration's unit suffixes, in seconds.
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Duration(click.ParamType):
    """Seconds above 0, as a number or with a unit: 90, 45s, 30m, 24h, 7d."""

    name = "duration"

    def convert(self, value: Any, param: Any, ctx: Any) -> float:
        if isinstance(value, (int, float)):
            seconds = float(value)
        else:
            text = str(value).strip().lower()
            unit = UNITS.get(text[-1:], 0)
            try:
                seconds = float(text[:-1] if unit else text) * (unit or 1)
            except ValueError:
                self.fail(f"{value!r} is not a duration (90, 45s, 30m, 24h, 7d)", param, ctx)
        if not 0 < seconds < float("inf"):
            self.fail(f"{value!r} is not a duration above 0", param, ctx)
        return seconds


def event_options() -> List[Callable]:
    return [
        env_option(
            "--events-retention",
            type=Duration(),
            default=EVENTS_RETENTION_SECONDS,
            show_default="24h",
            help="Keep every event newer than this (90, 30m, 24h, 7d) in the event stream...",
        ),
        env_option(
            "--events-max",
            type=click.IntRange(min=1),
            default=EVENTS_MAX,
            show_default=True,
            help="...up to this many entries; beyond them the oldest go, and those no shipper "
            "had are counted (rqconc_events_dropped_total).",
        ),
    ]


def event_retention(options: Dict[str, Any]) -> EventRetention:
    """The retention the options give (--events-retention, --events-max)."""
    return EventRetention(options["events_retention"], options["events_max"])
