"""The enqueue options of limits (SPEC 11): `group`, `ttl`, `unique_key`,
`unique_for`, `debounce`, validated and turned into hash fields (options.py asks here)."""

from __future__ import annotations

import math
import re
from typing import Any, Dict, Optional

FLOW_OPTION_NAMES = ("group", "ttl", "unique_key", "unique_for", "debounce")
_BAD_GROUP = re.compile(r"[\s,{}]")


def _seconds(name: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 < value <= 10 * 365 * 86400
    ):
        raise ValueError(f"{name} must be a finite number of seconds > 0, not {value!r}")
    return float(value)


def _key_text(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value or "\x00" in value or len(value) > 1024:
        raise ValueError(f"{name} must be a non-empty str (at most 1024 chars), not {value!r}")
    return value


def flow_fields(options: Dict[str, Any]) -> Dict[str, str]:
    """The hash fields of a job's flow options (options.common_fields calls this), validated:
    `flow_group`, `ttl_ms` (made `expires_at` by the enqueue, which knows the due time),
    `unique_key`, `unique_for` and `debounce` (ms)."""
    fields: Dict[str, str] = {}
    if options.get("group") is not None:
        group = _key_text("group", options["group"])
        if _BAD_GROUP.search(group):  # it ends up inside key names (braces: the hash tag)
            raise ValueError(f"group must not hold whitespace, commas or braces: {group!r}")
        fields["flow_group"] = group
    if options.get("ttl") is not None:
        fields["ttl_ms"] = str(round(_seconds("ttl", options["ttl"]) * 1000))
    unique = options.get("unique_key")
    for name in ("unique_for", "debounce"):
        if options.get(name) is not None:
            if unique is None:
                raise ValueError(f"{name} needs unique_key: it says how long that key holds")
            fields[name] = str(round(_seconds(name, options[name]) * 1000))
    if unique is not None:
        fields["unique_key"] = _key_text("unique_key", unique)
        if options.get("depends_on") is not None or options.get("job_id") is not None:
            raise ValueError("unique_key cannot take depends_on or job_id")
    return fields


def with_expiry(common: Dict[str, str], due_ms: Optional[int], now: int) -> Dict[str, str]:
    """The common fields with `ttl_ms` turned into `expires_at`: `ttl` counts from the due
    time (the take step cancels the job, event `expired`, when it pops it later)."""
    if "ttl_ms" not in common:
        return common
    fields = dict(common)
    fields["expires_at"] = str((now if due_ms is None else due_ms) + int(fields.pop("ttl_ms")))
    return fields
