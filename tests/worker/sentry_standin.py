"""A stand-in Sentry transport for tests/worker/test_sentry_hook.py: once this module is
imported, every `sentry_sdk.init` of the process sends through `RecordingTransport`, which
appends each event, as one JSON line, to the file `SENTRY_EVENTS` names (no network)."""

import json
import os

import sentry_sdk
from sentry_sdk.transport import Transport


class RecordingTransport(Transport):
    def capture_envelope(self, envelope):
        with open(os.environ["SENTRY_EVENTS"], "a") as events:
            for item in envelope.items:
                event = item.get_event()
                if event is not None:
                    events.write(json.dumps(event, default=str) + "\n")

    def flush(self, timeout, callback=None):
        pass  # every envelope is written as it is captured


_init = sentry_sdk.init


def _init_with_the_standin(*args, **kwargs):
    return _init(*args, transport=RecordingTransport, **kwargs)


sentry_sdk.init = _init_with_the_standin
