"""The Lua build is a visible layer (rqconc/store/build, docs/lua.md): what print_lua prints is
what Redis receives, its header tells where each include begins, and the text passes can
trust what they assume of the files."""

import hashlib
import re
from importlib import resources

import pytest

from rqconc.store.build import build, read
from rqconc.store.build.include import INCLUDED, Expansion
from rqconc.store.build.print_lua import main
from rqconc.store.scripts import script

LUA = resources.files("rqconc.store").joinpath("lua")
STEPS = sorted(p.name[: -len(".lua")] for p in LUA.iterdir() if p.name.endswith(".lua"))
INCLUDES = sorted(
    p.name[: -len(".lua")] for p in LUA.joinpath("include").iterdir() if p.name.endswith(".lua")
)


@pytest.mark.parametrize("name", STEPS)
def test_print_lua_prints_byte_for_byte_what_redis_receives(name, capsys):
    assert main([name, "--raw"]) == 0
    raw = capsys.readouterr().out
    assert raw == script(name).source
    assert main([name]) == 0
    first, *numbered = capsys.readouterr().out.rstrip("\n").split("\n")
    assert script(name).sha in first
    assert hashlib.sha1(raw.encode()).hexdigest() == script(name).sha
    lines = raw.split("\n")
    width = len(str(len(lines)))
    assert numbered == [f"{i:>{width}}  {line}" for i, line in enumerate(lines, 1)]


def test_the_header_names_each_include_once_at_the_line_it_begins():
    source = build("complete")
    lines = source.split("\n")
    named = re.findall(r"^--   (\w+) \(([^)]*)\): line (\d+)$", source, re.M)
    assert [name for name, _, _ in named][:3] == ["clock", "state", "keys"]
    assert len({name for name, _, _ in named}) == len(named)
    for name, _, line in named:
        assert lines[int(line) - 1] == INCLUDED.format(name), name
        assert source.count(INCLUDED.format(name)) == 1
    assert dict((n, needs) for n, needs, _ in named)["take"] == "NS, WORKER, NOW"


def test_an_include_that_needs_what_the_context_does_not_give_is_refused():
    expansion = Expansion("snippet", read)
    with pytest.raises(ValueError, match="include events needs .*EVENTS"):
        expansion.expand("--#context NS=ARGV[1] NOW=ARGV[2] WORKER=''\n--#include events\n")


def test_a_redis_error_names_a_line_of_the_printed_text(client):
    """A step that fails inside Redis: its error's line number points at the printed line."""
    source = build("save_meta")
    assert source.endswith("\nreturn 1\n")
    broken = source[: -len("return 1\n")] + "local boom = ARGV[9] .. 'x'\nreturn 1\n"
    line = broken.split("\n").index("local boom = ARGV[9] .. 'x'") + 1
    client.hset("k", "id", "k")  # save_meta writes only to a job that exists
    with pytest.raises(Exception, match=rf":{line}: .*concatenate"):
        client.eval(broken, 1, "k", "{}")


def _lua_strings(source):
    """The string literals of a Lua text ('...', "...", [[...]], [=[...]=]), comments
    skipped, as the Lua lexer reads them."""
    found, i, n = [], 0, len(source)
    while i < n:
        if source.startswith("--", i):
            long = re.match(r"--\[(=*)\[", source[i:])
            if long:
                i = source.index("]" + long.group(1) + "]", i) + len(long.group(1)) + 2
            else:
                end = source.find("\n", i)
                i = n if end < 0 else end
            continue
        long = re.match(r"\[(=*)\[", source[i:])
        if long:
            end = source.index("]" + long.group(1) + "]", i)
            found.append(source[i + len(long.group(0)) : end])
            i = end + len(long.group(1)) + 2
            continue
        if source[i] in "'\"":
            quote, j = source[i], i + 1
            while source[j] != quote:
                j += 2 if source[j] == "\\" else 1
            found.append(source[i + 1 : j])
            i = j + 1
            continue
        i += 1
    return found


def test_no_lua_string_holds_a_comment_opener():
    """build/prune.py and build/cold.py read a line's code with everything from `--` on left
    out (they do not parse strings): a `--` inside a string would hide code from them, so a
    used function could be pruned. No file may have one."""
    assert _lua_strings("local a = 'x--y' -- 'not--this'\nlocal b = [[z]]") == ["x--y", "z"]
    checked = 0
    for relative in [f"{s}.lua" for s in STEPS] + [f"include/{i}.lua" for i in INCLUDES]:
        for literal in _lua_strings(read(relative)):
            assert "--" not in literal, (relative, literal)
            checked += 1
    assert checked > 500


def test_the_step_wide_state_is_declared_in_state_lua_only():
    """A name in capitals that a function assigns is step-wide state: include/state.lua
    declares every one, so one place says what a step starts with."""
    declared = set(re.findall(r"^local ([A-Z][A-Z_]+) = ", read("include/state.lua"), re.M))
    assert "GATHERED" in declared and "HELD" in declared
    for relative in [f"{s}.lua" for s in STEPS] + [f"include/{i}.lua" for i in INCLUDES]:
        if relative == "include/state.lua":
            continue
        source = read(relative)
        own = set(re.findall(r"^local ([A-Z][A-Z_]+)\b", source, re.M))  # clock's NOW
        assigned = set(re.findall(r"^\s+([A-Z][A-Z_]+) = ", source, re.M)) - own
        assert assigned <= declared, (relative, assigned - declared)
        assert not own & declared, (relative, own & declared)


def _code(source: str) -> str:
    """Lua without its comments (long ones first: a `--[[` header holds names too)."""
    return re.sub(r"--[^\n]*", "", re.sub(r"--\[\[.*?\]\]", "", source, flags=re.S))


# Every function some include or step defines: a step that calls one must bring its include.
DEFINED_SOMEWHERE = {
    name
    for path in [*LUA.iterdir(), *LUA.joinpath("include").iterdir()]
    if path.name.endswith(".lua")
    for name in re.findall(r"local function (\w+)\(", path.read_text())
}


@pytest.mark.parametrize("name", STEPS)
def test_every_function_a_step_calls_is_defined_in_its_built_script(name):
    # Redis reports a missing one only when the call runs ("attempted to access nonexistent
    # global variable"), which for a rare path is in production: enqueue_unique.lua called
    # metric_count after the lifecycle split had stopped bringing include/metrics with it.
    code = _code(script(name).source)
    defined = set(re.findall(r"local function (\w+)\(", code))
    called = set(re.findall(r"(?<![\w.:])(\w+)\(", code))
    missing = sorted((called & DEFINED_SOMEWHERE) - defined)
    assert not missing, f"{name}.lua calls {missing} without the include that defines them"
