"""Jobs that log through their own logger, as a user's code does."""

import logging

log = logging.getLogger("myapp.tasks")


def say(text):
    log.warning("user code says %s", text)
    return text
