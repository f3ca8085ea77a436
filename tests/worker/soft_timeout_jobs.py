"""Jobs for tests/worker/test_soft_timeouts.py: each reacts to JobSoftTimeout its own way, as
a plain function (sleeping in short steps: a thread sees the exception between two sleeps)
and as an `async def` (one long await: the exception comes at that await)."""

from __future__ import annotations

import asyncio
import time

from rqconc import JobSoftTimeout
from rqconc.connection.clients import connect

LONG = 30.0  # longer than any test's hard timeout


def _sleep_long() -> None:
    ends = time.monotonic() + LONG
    while time.monotonic() < ends:
        time.sleep(0.02)


def cleans_up(url: str, marker: str) -> str:
    """Catches the soft timeout, writes its cleanup marker and returns in time."""
    try:
        _sleep_long()
    except JobSoftTimeout:
        connect(url).set(marker, "cleaned")
        return "cleaned up"
    return "never interrupted"


def ignores(url: str, marker: str) -> str:
    """Catches the soft timeout and carries on: only the hard timeout ends it."""
    try:
        _sleep_long()
    except JobSoftTimeout:
        connect(url).set(marker, "ignored")
        _sleep_long()
    return "outlived its timeout"


def propagates() -> str:
    """Lets the soft timeout end it: it fails with JobSoftTimeout."""
    _sleep_long()
    return "never interrupted"


async def cleans_up_async(url: str, marker: str) -> str:
    try:
        await asyncio.sleep(LONG)
    except JobSoftTimeout:
        connect(url).set(marker, "cleaned")
        return "cleaned up"
    return "never interrupted"


async def ignores_async(url: str, marker: str) -> str:
    try:
        await asyncio.sleep(LONG)
    except JobSoftTimeout:
        connect(url).set(marker, "ignored")
        await asyncio.sleep(LONG)
    return "outlived its timeout"


async def propagates_async() -> str:
    await asyncio.sleep(LONG)
    return "never interrupted"
