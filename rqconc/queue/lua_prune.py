"""Drop the functions a script never calls from its expanded source (scripts.Script).

Redis runs a script's whole body on every call, so each `local function` of the includes
(lua/include/lifecycle.lua defines some forty) is a closure created, and later collected,
on every call of every step, whether the step calls it or not: about 55 ns each, several
microseconds of Redis CPU per step (bench/redis_cost.py). Redis (6.2 is the minimum) keeps
nothing between calls, so the only way to not pay for a function is to not define it.

The includes keep their one shape for every step; this removes, from one script's text, each
top-level function whose name no code outside its own definition mentions (repeated, since
removing one may leave another unused). Top-level means what the includes write: the
definition starts at column 0 with `local function NAME(` and either ends on that line or at
the next line that is exactly `end`. Mentions are looked for with comments left out, so a
name that only a comment mentions does not keep a function.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

_DEFINITION = re.compile(r"^local function (\w+)\(")
# Long comments (--[[ ... ]]) and line comments; no string of the steps holds "--".
_COMMENT = re.compile(r"--\[\[.*?\]\]|--[^\n]*", re.DOTALL)


def _definitions(lines: List[str]) -> Dict[str, Tuple[int, int]]:
    """name -> (first line, last line) of every top-level function of the expected shape; a
    definition of any other shape is left out, so it is always kept."""
    found: Dict[str, Tuple[int, int]] = {}
    i = 0
    while i < len(lines):
        match = _DEFINITION.match(lines[i])
        if not match:
            i += 1
            continue
        follows = lines[i + 1] if i + 1 < len(lines) else ""
        if follows[:1] not in (" ", "\t") and follows.rstrip() != "end":
            if _COMMENT.sub("", lines[i]).rstrip().endswith(" end"):  # a one-line function
                found[match.group(1)] = (i, i)
            i += 1
            continue
        last = i + 1
        while last < len(lines) and (lines[last][:1] in (" ", "\t") or not lines[last].strip()):
            last += 1
        if last < len(lines) and lines[last].rstrip() == "end":
            found[match.group(1)] = (i, last)
        i = last
    return found


def prune(source: str) -> str:
    """`source` without the top-level functions nothing calls."""
    lines = source.split("\n")
    while True:
        unused = []
        for name, (first, last) in _definitions(lines).items():
            rest = _COMMENT.sub("", "\n".join(lines[:first] + lines[last + 1 :]))
            if not re.search(rf"\b{re.escape(name)}\b", rest):
                unused.append((first, last))
        if not unused:
            return "\n".join(lines)
        for first, last in sorted(unused, reverse=True):
            del lines[first : last + 1]
