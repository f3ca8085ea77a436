"""Jobs for tests/cli/test_worker_timing_settings.py."""

import time


def slow_callback(job, result):
    time.sleep(30)  # far longer than the worker's --callback-timeout in the test
