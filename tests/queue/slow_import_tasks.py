"""A module whose import takes a while before it defines its function: enqueueing it by name
while another thread imports it (tests/queue/test_enqueue.py)."""

import time

time.sleep(0.5)


def ready():
    return "ready"
