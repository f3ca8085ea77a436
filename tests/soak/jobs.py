"""The soak's job."""


def noop():
    return None
