"""The demo's jobs: a realistic mix of I/O waits, CPU bursts and failures.
A worker always allows this module."""

from __future__ import annotations

import time


def send_sms(number: str, text: str, seconds: float) -> str:
    time.sleep(seconds)  # an API call
    return f"sent {len(text)} chars to {number}"


def render_thumbnail(pixels: int) -> int:
    checksum = 0
    for value in range(pixels):  # CPU work
        checksum = (checksum * 31 + value) & 0xFFFFFFFF
    return checksum


def charge_card(amount: int) -> None:
    raise ValueError(f"card declined for amount {amount}")
