"""Jobs that end the ways the supervisor records: they say they run, then wait to be ended."""

import os

from rqconc.connection.clients import connect


class ChildDeath(BaseException):
    """Not an Exception: it ends the in-process child running the job, as a crash would."""


def block(url: str, token: str, seconds: float = 60.0) -> str:
    """Push '<token>:<pid>' to the list 'running', then wait until the test pushes to the
    list `token` (or `seconds` pass)."""
    client = connect(url)
    client.rpush("running", f"{token}:{os.getpid()}")
    client.blpop([token], timeout=seconds)
    return token


def die(url: str, token: str) -> None:
    """Say it runs, then end its in-process child."""
    connect(url).rpush("running", f"{token}:{os.getpid()}")
    raise ChildDeath(f"job {token} ends its child")
