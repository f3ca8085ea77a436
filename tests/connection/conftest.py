"""Fixtures of the connection tests."""

from __future__ import annotations

import pytest

from rqconc.connection import embedded
from tests.support.redis_server import servers_on


@pytest.fixture
def embedded_home():
    """The test's RQCONC_HOME; afterwards no embedded server of this home is left running."""
    where = embedded.paths()
    yield where
    try:
        embedded.stop()
    finally:
        for process in servers_on(where.socket):  # a stray second server would be a bug
            process.kill()
            process.wait(5)
