"""Job functions for the seed-parity tests (tests/queue/test_parity_*.py)."""

import os
from os import getcwd  # noqa: F401 - a name a job must not reach through this module


def send_sms(number, text):
    return f"sent {text!r} to {number}"


class Messages:
    @staticmethod
    def shout(text):
        return text.upper()


def fail_once(path, exc_name, *args):
    """Raise the botocore error `exc_name` (built from args) on the first run, then return
    "ok": a retried job finishes, one failed for good stays failed."""
    import botocore.exceptions  # here, not at the top: only these jobs load botocore

    if os.path.exists(path):
        return "ok"
    open(path, "w").close()
    if exc_name == "ClientError":
        code, status = args
        response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
        raise botocore.exceptions.ClientError(response, "PutObject")
    raise getattr(botocore.exceptions, exc_name)(endpoint_url="https://s3.example")


def tagged(value):
    if value == "bad":
        raise ValueError(f"no good: {value}")
    return {"got": value}
