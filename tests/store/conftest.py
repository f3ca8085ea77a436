"""The tests of the store layer (rqconc/store/: the Lua steps, their build, their cost).
Most of their fixtures (client, keys, steps, queue, make_source, source) are in
tests/conftest.py, shared with tests/queue/ and tests/scale/; the jobs they run are in
tests/queue/tasks.py."""

import pytest

from rqconc.store.steps.maintenance import MaintenanceSteps


@pytest.fixture
def maintenance(client, keys):
    """The maintenance steps (lease recovery, the trim of expired entries)."""
    return MaintenanceSteps(client, keys)
