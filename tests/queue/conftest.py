"""The fixtures the queue's tests use (client, keys, steps, queue, make_source, source) are
in tests/conftest.py: the store's tests (tests/store/) and tests/scale/ use them too."""
