"""Define a script's rarely run functions only when one of them runs (scripts.Script).

Redis runs a script's whole body on every call, and Redis 6.2 (the minimum) keeps nothing
between calls: each `local function` of the includes is a closure made on every call, with
every upvalue it names looked up then (build/prune.py drops those a script never calls). The
functions that a plain job never reaches (groups and chords, dependents, follow-ups,
cancellation, dead letters) still cost the hot steps several microseconds that way
(bench/step_cost.py --callgrind). So the includes mark them:

    --#cold
    local function settle_found_dependents(parent_id, parent_ok)

and this pass moves each marked definition into one builder, `cold()`, that makes them all
on its first call in a step and hands back the table of them; each use of a cold function
`name(` becomes `cold().name(`. A step that never reaches one pays for two locals.

Rules for the includes (tests/store/test_lua_cold.py checks them on every script):
- a cold function is only called (`name(`), never passed as a value;
- its definition has the shape build/prune.py reads: `local function NAME(` at column 0, on
  one line or up to the next line that is exactly `end`;
- the builder is placed after the script's last `--#include` (scripts.expand marks that
  line), so a cold function may use any function or constant of the includes.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

COLD_MARK = "--#cold"
BUILDER_MARK = "--#cold-builder"
_DEFINITION = re.compile(r"^local function (\w+)\(")


def _cold_spans(lines: List[str]) -> Dict[str, Tuple[int, int]]:
    """name -> (first, last) line of each definition right under a COLD_MARK line."""
    spans: Dict[str, Tuple[int, int]] = {}
    for i, line in enumerate(lines[:-1]):
        if line.strip() != COLD_MARK:
            continue
        match = _DEFINITION.match(lines[i + 1])
        if not match:  # its function was pruned (build/prune.py runs first)
            continue
        first = last = i + 1
        if not lines[first].rstrip().endswith(" end"):
            while lines[last].rstrip() != "end":
                last += 1
        spans[match.group(1)] = (first, last)
    return spans


def coldify(source: str) -> str:
    """`source` (expanded and pruned) with its marked functions built on first use."""
    lines = source.split("\n")
    spans = _cold_spans(lines)
    if not spans:
        return "\n".join(line for line in lines if line != BUILDER_MARK)
    names = "|".join(sorted(spans, key=len, reverse=True))
    # A use: the name as a whole word, called, neither a field of something else nor the
    # name of a nested function of its own (which would shadow it).
    use = re.compile(rf"(?<![\w.:])(?<!function )({names})\s*\(")
    moved = [False] * len(lines)
    bodies: List[str] = []
    for name, (first, last) in sorted(spans.items(), key=lambda item: item[1]):
        header = _DEFINITION.sub(f"C.{name} = function(", lines[first], count=1)
        bodies += ["  " + header] + ["  " + line for line in lines[first + 1 : last + 1]]
        moved[first : last + 1] = [True] * (last + 1 - first)
    builder = [
        "-- The cold functions (rqconc/store/build/cold.py), made on the first call of one.",
        "cold = function()",
        "  if COLD then return COLD end",
        "  local C = {}",
        "  COLD = C",
        *bodies,
        "  return C",
        "end",
    ]
    out: List[str] = ["local cold, COLD  -- the builder of the cold functions, and its table"]
    placed = False
    for line, gone in zip(lines, moved):
        if gone:
            continue
        if line == BUILDER_MARK:
            out += builder
            placed = True
            continue
        out.append(line)
    if not placed:
        raise ValueError(f"a script with {COLD_MARK} functions needs {BUILDER_MARK}")
    return use.sub(lambda m: f"cold().{m.group(1)}(", "\n".join(out))
