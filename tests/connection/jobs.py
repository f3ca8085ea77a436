"""Jobs for the connection-fault tests: their trace is a file, so it never meets Redis'
outage (a job whose own Redis write fails would rightly run again)."""

import os
import time


def mark(path: str, token: str, seconds: float = 0.0) -> str:
    """Append one line '<token>' to `path` (O_APPEND: whole lines from any process)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{token}\n".encode())
    finally:
        os.close(fd)
    if seconds:
        time.sleep(seconds)
    return token
