"""Jobs that keep log lines (SPEC 17) for tests/worker/test_job_logs.py."""

from __future__ import annotations

import asyncio
import logging
import time

from rqconc import get_current_job

records = logging.getLogger("rqconc.job")


def talk(tag: str, lines: int, pause: float = 0.01) -> str:
    """Alternate `job.log()` lines and `rqconc.job` records, yielding between them (a sleep:
    gevent's yields), so that jobs run side by side interleave their writes."""
    job = get_current_job()
    assert job is not None
    for n in range(lines):
        if n % 2:
            records.info("%s record %d", tag, n)
        else:
            job.log(f"{tag} line {n}")
        time.sleep(pause)
    return tag


async def talk_async(tag: str, lines: int) -> str:
    job = get_current_job()
    assert job is not None
    for n in range(lines):
        if n % 2:
            records.info("%s record %d", tag, n)
        else:
            job.log(f"{tag} line {n}")
        await asyncio.sleep(0.01)
    return tag


def talk_then_fail(tag: str) -> None:
    get_current_job().log(f"{tag} before the failure")  # type: ignore[union-attr]
    try:
        raise KeyError(tag)
    except KeyError:
        records.exception("%s failed", tag)
        raise


def silent() -> str:
    return "nothing logged"


def talk_then_hang(tag: str) -> None:
    """Logs, then overruns its timeout: the supervisor records the failure (and seals)."""
    get_current_job().log(f"{tag} before the timeout")  # type: ignore[union-attr]
    time.sleep(60)
