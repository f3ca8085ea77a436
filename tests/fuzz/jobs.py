"""Functions the fuzz suite's workers run."""


def echo(value):
    """Exactly one positional argument, returned as it came."""
    return value


def length(value):
    return len(value)
