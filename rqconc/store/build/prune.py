"""Drop the functions a script never calls from its expanded source (scripts.Script).

Redis runs a script's whole body on every call, so each `local function` of the includes
(lua/include/ defines some eighty) is a closure created, and later collected,
on every call of every step, whether the step calls it or not: about 55 ns each, several
microseconds of Redis CPU per step (bench/redis_cost.py). Redis (6.2 is the minimum) keeps
nothing between calls, so the only way to not pay for a function is to not define it.

The includes keep their one shape for every step; this removes, from one script's text, each
top-level function that the code outside every definition cannot reach (it calls none that
calls it, through any chain). Top-level means what the includes write: the
definition starts at column 0 with `local function NAME(` and either ends on that line or at
the next line that is exactly `end`. Mentions are looked for with comments left out, so a
name that only a comment mentions does not keep a function.
"""

from __future__ import annotations

import re
from typing import Dict, List, Set, Tuple

_DEFINITION = re.compile(r"^local function (\w+)\(")
# Long comments (--[[ ... ]]) and line comments; no string of the steps holds "--".
_COMMENT = re.compile(r"--\[\[.*?\]\]|--[^\n]*", re.DOTALL)
_WORD = re.compile(r"\w+")


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
    """`source` without the top-level functions nothing calls: those not reachable from the
    code outside every definition. One pass over the text (it runs when a process first uses
    a script, so a worker's first job must not wait for it)."""
    lines = source.split("\n")
    spans = _definitions(lines)
    inside = [False] * len(lines)
    mentions: Dict[str, Set[str]] = {}
    for name, (first, last) in spans.items():
        body = "\n".join(lines[first : last + 1])
        mentions[name] = set(_WORD.findall(_COMMENT.sub("", body))) - {name}
        inside[first : last + 1] = [True] * (last + 1 - first)
    outside = "\n".join(line for line, within in zip(lines, inside) if not within)
    todo = [name for name in set(_WORD.findall(_COMMENT.sub("", outside))) if name in spans]
    used = set(todo)
    while todo:
        for name in mentions[todo.pop()]:
            if name in spans and name not in used:
                used.add(name)
                todo.append(name)
    dropped = [False] * len(lines)
    for name, (first, last) in spans.items():
        if name not in used:
            dropped[first : last + 1] = [True] * (last + 1 - first)
    return "\n".join(line for line, gone in zip(lines, dropped) if not gone)
