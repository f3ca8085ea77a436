"""Faults of the wire between rqconc and Redis: lost replies, restarts, capped pools.
(The `start_worker` fixture comes from tests/conftest.py.)"""
