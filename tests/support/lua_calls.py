"""How the Lua steps reach a test's Redis: as functions of the steps' library on Redis 7,
as scripts by SHA on 6.2 (rqconc/store/functions.py). Tests that count the steps, or cut the
reply to one, ask here instead of naming EVALSHA."""

from __future__ import annotations

from typing import Any

from rqconc.store import functions
from rqconc.store.scripts import script


def has_functions(client: Any) -> bool:
    """Does this server serve Redis Functions (7.0+)?"""
    return int(str(client.info("server")["redis_version"]).split(".")[0]) >= 7


def step_calls(client: Any) -> int:
    """The Lua steps the server ran (FCALL and EVALSHA calls, INFO commandstats)."""
    stats = client.info("commandstats")
    return sum(stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("evalsha", "fcall"))


def step_command(client: Any) -> bytes:
    """The command a step is sent as on this server."""
    return b"FCALL" if has_functions(client) else b"EVALSHA"


def preloaded(client: Any, name: str) -> bytes:
    """Load step `name` as the worker will call it (the library on Redis 7, the script on
    6.2), so that its first call runs at once; returns what the request of that call holds
    and no other step's does (a function's name ends where its RESP string does)."""
    step = script(name)
    if has_functions(client):
        client.function_load(functions.text(name), replace=True)
        return step.function.encode() + b"\r\n"
    client.script_load(step.source)
    return step.sha.encode()
