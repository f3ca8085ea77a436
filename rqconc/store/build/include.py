"""The first pass of a step's build: its `--#context` line and `--#include` lines expanded.

Redis scripts cannot call one another, and every step that ends a job must settle its
dependents, follow-ups and limits identically, so the shared Lua lives in lua/include/, one
file per concern, and is copied into each step's text here. Then build/prune.py drops the
functions the step never calls and build/cold.py moves the rarely run ones into a builder
(`python -m rqconc.store.build.print_lua NAME` prints the result, as Redis receives it).

What a step and its includes write (docs/lua.md lists the rules and their tests):
- `--#context NAME=VALUE ...` (in the step, once, before its includes): the step's context,
  the values its includes read (the namespace prefix, the keys of the seq counter and the
  event stream, the acting worker...). It becomes one `local` line, so reading one costs
  what reading a local does: a context table would cost a lookup on each use, and these
  are read for every key a step names.
- `--#include NAME` (in a step or an include): lua/include/NAME.lua, expanded where the
  first such line stands and nowhere else: an include that uses another includes it itself,
  and the text holds each file once, before its first user.
- `--#needs NAME ...` (in an include): the context values it reads; the build refuses a
  step whose context (or an include before, `--#gives`) does not give one.
- `--#gives NAME ...` (in an include): a value it defines for those after it (clock: NOW).

The built text begins with a comment naming the context, the includes in order and each
one's needs, so a line number in a Redis error can be traced to its file.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Set, Tuple

INCLUDE = re.compile(r"^--#include (\w+)$", re.MULTILINE)
CONTEXT = re.compile(r"^--#context (.+)$", re.MULTILINE)
_NEEDS = re.compile(r"^--#needs ([\w ]+)$", re.MULTILINE)
_GIVES = re.compile(r"^--#gives ([\w ]+)$", re.MULTILINE)
_ENTRY = re.compile(r"(\w+)=(\S+)")
INCLUDED = "-- ==== include/{}.lua ===="  # the line above each include's text
# The line below it, in the library's build only (build/library.py: where an include ends).
INCLUDE_END = "-- ==== end of include/{}.lua ===="

Read = Callable[[str], str]


class Expansion:
    """One step's includes expanded, each once, with what each needs from its context."""

    def __init__(self, step: str, read: Read, mark_ends: bool = False) -> None:
        self.step = step
        self.read = read
        self.mark_ends = mark_ends
        self.context: Dict[str, str] = {}
        self.given: Set[str] = set()
        self.order: List[Tuple[str, List[str]]] = []  # (include, its needs) in text order
        self.started: Set[str] = set()

    def context_line(self, match: re.Match[str]) -> str:
        pairs = _ENTRY.findall(match.group(1))
        if not pairs or self.context:
            raise ValueError(f"{self.step}: one --#context line of NAME=VALUE pairs")
        self.context = dict(pairs)
        self.given |= set(self.context)
        names, values = zip(*pairs)
        return f"local {', '.join(names)} = {', '.join(values)}  -- the step's context"

    def include(self, name: str) -> str:
        if name in self.started:
            return ""  # expanded above, where its first user included it
        self.started.add(name)  # before its own includes expand: a circle ends here
        source = self.read(f"include/{name}.lua")
        needs = [n for found in _NEEDS.findall(source) for n in found.split()]
        # What it includes goes above its own text, so the text reads in order.
        above = "".join(self.include(m.group(1)) for m in INCLUDE.finditer(source))
        body = INCLUDE.sub("", source).replace("\n\n\n", "\n\n")
        missing = [n for n in needs if n not in self.given]
        if missing:
            raise ValueError(
                f"{self.step}: include {name} needs {', '.join(missing)}, which neither the "
                "step's --#context nor an include before it gives"
            )
        self.given |= {n for found in _GIVES.findall(source) for n in found.split()}
        self.order.append((name, needs))
        end = INCLUDE_END.format(name) + "\n" if self.mark_ends else ""
        return f"{above}{INCLUDED.format(name)}\n{body.rstrip()}\n{end}"

    def expand(self, source: str) -> str:
        source = CONTEXT.sub(self.context_line, source)
        return INCLUDE.sub(lambda m: self.include(m.group(1)), source)

    def header(self, built: str) -> str:
        """The comment the built text begins with: `built` (the text below it) gives each
        include's first line."""
        context = " ".join(f"{name}={value}" for name, value in self.context.items())
        lines = [
            f"-- Step `{self.step}` as Redis runs it: lua/{self.step}.lua with its includes "
            "expanded (each once),",
            "-- uncalled functions pruned, cold ones moved into cold() (rqconc/store/build).",
            f"-- Print it numbered: python -m rqconc.store.build.print_lua {self.step}",
        ]
        if context:
            lines.append(f"-- Context: {context}")
        if self.order:
            lines.append("-- Includes in order: the context values each needs, its first line:")
        below = built.split("\n")
        first = len(lines) + len(self.order) + 1  # the line of built's first line
        for name, needs in self.order:
            line = below.index(INCLUDED.format(name)) + first
            lines.append(f"--   {name} ({', '.join(needs) or '-'}): line {line}")
        return "\n".join(lines) + "\n"


def expand_step(
    step: str, read: Read, builder_mark: str, mark_ends: bool = False
) -> Tuple[Expansion, str]:
    """Step `step`'s source (lua/<step>.lua) expanded, with `builder_mark` after its last
    include (build/cold.py puts the builder of the cold functions there, below every
    function they may use); the expansion gives the header once the text is built.
    `mark_ends`: each include's text is followed by INCLUDE_END (the library's build)."""
    source = read(f"{step}.lua")
    expansion = Expansion(step, read, mark_ends)
    found = list(INCLUDE.finditer(source))
    if found:
        end = found[-1].end()
        return expansion, expansion.expand(source[:end]) + "\n" + builder_mark + source[end:]
    return expansion, expansion.expand(source)
