"""Suspend and resume every worker of a namespace (`rqconc suspend` / `rqconc resume`).

A suspended worker takes no new job (its busy children finish theirs) and shows the state
`suspended` in the registry. Workers look about once a second.
"""

from __future__ import annotations

import math
from typing import Optional

from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.store.keys import KeySpace


def suspend(
    connection: ConnectionLike = None, duration: Optional[float] = None, namespace: str = "rqconc"
) -> None:
    """Suspend all workers; with `duration` (seconds) they resume by themselves after it."""
    if duration is not None and not (
        isinstance(duration, (int, float)) and math.isfinite(duration) and duration >= 0.001
    ):
        raise ValueError(f"duration must be a finite number of seconds >= 0.001, not {duration!r}")
    client = connect(connection)
    with translated_errors(client):
        key = KeySpace(namespace).suspended
        if duration is None:
            client.set(key, "1")
        else:
            client.set(key, "1", px=int(duration * 1000))


def resume(connection: ConnectionLike = None, namespace: str = "rqconc") -> None:
    client = connect(connection)
    with translated_errors(client):
        client.delete(KeySpace(namespace).suspended)


def is_suspended(connection: ConnectionLike = None, namespace: str = "rqconc") -> bool:
    client = connect(connection)
    with translated_errors(client):
        return bool(client.exists(KeySpace(namespace).suspended))
