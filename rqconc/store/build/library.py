"""The steps as Redis Functions libraries (Redis 7.0+), one a step: what store/functions.py
loads with `FUNCTION LOAD REPLACE` and calls with FCALL, and `print_lua NAME --library`
prints.

On every call of a script Redis runs its whole text: a hot step makes each of its `local
function`s (closures) again before doing anything (bench/PROFILE.md, section 2). A library's
text runs once, when it is loaded; a call runs only the function it names. So each step
becomes one `do ... end` block, its library, built from the same lua/ files by the same
passes as its script (build/include.py with each include's end marked, build/prune.py):

    do
    local KEYS, ARGV            -- this call's, set first by the step's function below
    local NS, SEQ, ...          -- the step's context, declared; assigned on each call
    <the includes: functions and constants, made once per load>
    local function main()
      <the step's own lines: what the script runs after its includes>
    end
    redis.register_function(LIBRARY .. '_<step>', function(keys, args)
      KEYS, ARGV = keys, args
      <the context's values, then each include's `--#per-call` part>
      return main()
    end)
    end

Invariants (tests/store/test_lua_library.py checks them):
- What a call must start afresh is marked `--#per-call` in the include that declares it
  (include/state.lua: the step-wide state; include/clock.lua: NOW). From that line to the
  next blank line, `local NAMES = VALUES` becomes the block's `local NAMES` and the
  assignment `NAMES = VALUES` at the start of each call; any other line (clock's `do ...
  end`) moves there as it is. Everything else an include declares at its top level is a
  function or a constant, which one call cannot change for the next.
- The step's own top-level code, its own `local function`s included, stays per call
  (main), exactly as in the script; the cold builder (build/cold.py) is left out: a
  function of a library costs nothing until it is called.
- Functions cannot set globals: KEYS and ARGV are the block's locals.
"""

from __future__ import annotations

import hashlib
import re
from typing import Callable, List

from rqconc.store.build.cold import BUILDER_MARK, COLD_MARK
from rqconc.store.build.include import INCLUDE_END, INCLUDED, expand_step
from rqconc.store.build.prune import prune

PER_CALL = "--#per-call"
LIBRARY_PREFIX = "rqconc_"
_START = re.compile("^" + re.escape(INCLUDED).replace(r"\{\}", r"(\w+)") + "$")
_END = re.compile("^" + re.escape(INCLUDE_END).replace(r"\{\}", r"(\w+)") + "$")
_CONTEXT = re.compile(r"^local (.+?) = (.+?)  -- the step's context$")
_DECLARATION = re.compile(r"^local ([\w, ]+?)(?: = (.*?))?(\s+--.*)?$")

Read = Callable[[str], str]


class _Block:
    """One step's text sorted into what the block declares once (`shared`), what each call
    runs first (`per_call`) and the step's own code (`main`)."""

    def __init__(self) -> None:
        self.shared: List[str] = []
        self.per_call: List[str] = []
        self.main: List[str] = []
        self.include = ""  # the include whose text the line is in, or "" (the step's)
        self.marked = False  # inside a --#per-call part
        self.heading = False  # inside the step's header comment (--[[ ... ]])

    def add(self, line: str) -> None:
        if line == BUILDER_MARK or line.strip() == COLD_MARK:
            return
        start, end = _START.match(line), _END.match(line)
        if start or end:
            self.include, self.marked = (start.group(1) if start else ""), False
            if start:
                self.shared.append(line)
            return
        if not self.include:
            if not (self.shared or self.main) and line.startswith("--[["):
                self.heading = True
            self._own(line)
        elif line.startswith(PER_CALL):
            self.marked = True
            self.shared.append(line)
        elif self.marked and line.strip():
            self._per_call(line)
        else:
            self.marked = False
            self.shared.append(line)

    def _own(self, line: str) -> None:
        context = _CONTEXT.match(line)
        if context:
            self.shared.append(f"local {context.group(1)}  -- the step's context (set per call)")
            self.per_call.append(f"{context.group(1)} = {context.group(2)}")
        elif self.heading:  # the step's header comment heads its block, not main
            self.shared.append(line)
            self.heading = "]]" not in line
        else:
            self.main.append(line)

    def _per_call(self, line: str) -> None:
        declared = _DECLARATION.match(line)
        if declared:
            names, value, comment = declared.groups()
            self.shared.append(f"local {names}{comment or ''}")
            if value is not None:
                self.per_call.append(f"{names} = {value}")
        else:
            self.per_call.append(line)


def step_block(name: str, read: Read) -> str:
    """Step `name` as one block of the library: its includes made once, its own code run by
    the function it registers."""
    _, expanded = expand_step(name, read, BUILDER_MARK, mark_ends=True)
    block = _Block()
    for line in prune(expanded).split("\n"):
        block.add(line)
    return "\n".join(
        [
            _opening(name),
            "local KEYS, ARGV  -- this call's, set first by the step's function below",
            *block.shared,
            "-- The step's own code: what its script runs after its includes, on each call.",
            "local function main()",
            *block.main,
            "end",
            f"redis.register_function(LIBRARY .. '_{name}', function(keys, args)",
            "  KEYS, ARGV = keys, args",
            *["  " + line for line in block.per_call],
            "  return main()",
            "end)",
            "end",
        ]
    )


def library(prefix: str, step: str, read: Read) -> str:
    """The text of step `step`'s library, `<prefix>_<step>`, whose one function has the
    same name. One library a step, as one script a step: a server that lacks a step loads
    that step alone, so a process's first step builds one block, not every step's (0.4 s)."""
    name = f"{prefix}_{step}"
    head = [
        f"#!lua name={name}",
        "-- An rqconc Lua step as a Redis Functions library (rqconc/store/build/library.py).",
        "-- Print it numbered (the lines of `user_function:N:` errors):",
        f"-- python -m rqconc.store.build.print_lua {step} --library",
        f"local LIBRARY = '{prefix}'",
    ]
    return "\n".join(head) + "\n" + step_block(step, read) + "\n"


def library_prefix(sources: List[str]) -> str:
    """The prefix of every step's library and function: the SHA1 of what their texts are
    built from (every lua/ file and the build/ modules), which fixes the texts. Two versions
    of rqconc sharing a server each call their own functions, and a process learns the names
    without building any text (a server that lacks a step needs that one only)."""
    digest = hashlib.sha1("\0".join(sources).encode()).hexdigest()
    return LIBRARY_PREFIX + digest[:16]


def _opening(step: str) -> str:
    return f"do  -- ==== step {step}: lua/{step}.lua ===="
