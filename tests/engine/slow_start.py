"""Preloaded by the children of tests that stop a worker while its children still start:
an import as slow as a heavy application's (the children stay STARTING all along)."""

import time

time.sleep(60)
