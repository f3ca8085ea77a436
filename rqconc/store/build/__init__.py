"""The build of a step's Lua: what scripts.Script loads and python -m
rqconc.store.build.print_lua prints. Three passes over the text of lua/<name>.lua:
build/include.py (the context and includes expanded), build/prune.py (the functions it
never calls dropped), build/cold.py (the rarely run ones made on first use).
build/library.py makes each step a Redis Functions library from the same passes."""

from __future__ import annotations

from importlib import resources
from typing import List, Optional

from rqconc.store.build.cold import BUILDER_MARK, coldify
from rqconc.store.build.include import Expansion, expand_step
from rqconc.store.build.library import library
from rqconc.store.build.library import library_prefix as prefix_of
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


def step_names() -> List[str]:
    """Every step: the names of the files of rqconc/store/lua/."""
    found = resources.files("rqconc.store").joinpath("lua").iterdir()
    return sorted(p.name[: -len(".lua")] for p in found if p.name.endswith(".lua"))


def library_prefix() -> str:
    """The prefix of the names of the steps' Functions libraries (build/library.py)."""
    package = resources.files("rqconc.store")
    lua = package.joinpath("lua")
    files = [lua.joinpath(f"{name}.lua") for name in step_names()]
    files += sorted(lua.joinpath("include").iterdir(), key=lambda p: p.name)
    files += sorted(package.joinpath("build").iterdir(), key=lambda p: p.name)
    return prefix_of(
        [f"{p.name}\n{p.read_text()}" for p in files if p.name.endswith((".lua", ".py"))]
    )


def build_library(step: str, prefix: Optional[str] = None) -> str:
    """Step `step` as a Redis Functions library (build/library.py); `prefix`: the
    libraries' name prefix when the caller knows it (reading every file for it takes ms)."""
    return library(prefix or library_prefix(), step, read)
