"""Faults of the wire between rqconc and Redis: lost replies, restarts, capped pools."""

from tests.worker.conftest import start_worker  # noqa: F401 - a fixture, re-exported
