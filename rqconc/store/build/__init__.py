"""The build of a step's Lua: what scripts.Script loads and python -m
rqconc.store.build.print_lua prints. Three passes over the text of lua/<name>.lua:
build/include.py (the context and includes expanded), build/prune.py (the functions it
never calls dropped), build/cold.py (the rarely run ones made on first use)."""

from __future__ import annotations

from importlib import resources

from rqconc.store.build.cold import BUILDER_MARK, coldify
from rqconc.store.build.include import Expansion, expand_step
from rqconc.store.build.prune import prune


def read(relative: str) -> str:
    """The text of a file under rqconc/store/lua/."""
    return resources.files("rqconc.store").joinpath("lua").joinpath(relative).read_text()


def build(name: str) -> str:
    """Step `name`'s text exactly as Redis receives it."""
    expansion, expanded = expand_step(name, read, BUILDER_MARK)
    built = coldify(prune(expanded))
    return expansion.header(built) + built


def expand(source: str) -> str:
    """A piece of Lua (a test's) with its `--#context` and `--#include` lines expanded as a
    step's are, without the header, pruning or cold builder."""
    return Expansion("snippet", read).expand(source)
