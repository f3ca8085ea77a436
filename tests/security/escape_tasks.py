"""Jobs for the allow-list escape test: a module the worker allows (`--allow tests`) that
imports callables defined elsewhere. Only what is defined here may run."""

from os import system  # noqa: F401 - the escape: "tests.security.escape_tasks:system"
from subprocess import Popen  # noqa: F401 - a foreign class

from rqconc import Next


class Hidden:
    """A class of the allowed module whose attribute is a foreign function."""

    spawn = staticmethod(system)

    @staticmethod
    def double(x):
        return 2 * x


def own(x):
    return x + 1


def hand_on(command):
    """A flow stage of the allowed module whose next stage is the foreign function."""
    return Next("sec", "tests.security.escape_tasks:system", command, result="handed on")
