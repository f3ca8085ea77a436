"""Scripts are loaded without the include functions they never call (rqconc/store/build/prune)."""

import re
from importlib import resources

from rqconc.store.build import expand, read
from rqconc.store.build.include import expand_step
from rqconc.store.build.prune import prune
from rqconc.store.scripts import script

SOURCE = """local NS = ARGV[1]
-- unused_helper is named in this comment only
local function used(x) return NS .. x end
local function only_for_unused(x)
  return x .. 'b'
end
local function unused_helper(x)
  if x then
    return only_for_unused(x)
  end
  return ''
end
local function recursive(n)
  if n > 0 then return recursive(n - 1) end
  return used('r')
end
return recursive(2)
"""


def functions(source):
    return re.findall(r"^local function (\w+)\(", source, re.M)


def cold_functions(source):
    """The functions build/cold.py moved into the builder of a step's cold functions."""
    return re.findall(r"^  C\.(\w+) = function\(", source, re.M)


def test_prune_drops_functions_nothing_calls_and_those_only_they_call(client):
    pruned = prune(SOURCE)
    assert functions(pruned) == ["used", "recursive"]
    assert client.eval(pruned, 0, "ns:") == client.eval(SOURCE, 0, "ns:") == b"ns:r"


def test_every_step_loads_pruned_and_the_hot_steps_define_fewer_closures(client):
    names = [
        p.name[: -len(".lua")]
        for p in resources.files("rqconc.store").joinpath("lua").iterdir()
        if p.name.endswith(".lua")
    ]
    assert "take" in names and "complete" in names
    for name in names:
        step = script(name)
        # SCRIPT LOAD compiles it: a pruned call to a dropped function would still load, so
        # every name a kept line calls must still be defined (or be Lua's / Redis').
        assert client.script_load(step.source) == step.sha
        defined = set(functions(step.source)) | set(cold_functions(step.source))
        for called in functions(expand_step(name, read, "")[1]):
            if called not in defined:
                assert not re.search(rf"\b{called}\(", step.source), (name, called)
    # A take needs none of the follow-up, chord and dead-letter functions.
    assert len(functions(script("take").source)) < len(functions(expand_step("take", read, "")[1]))
    assert "spawn_followups" not in functions(script("take").source)
    assert "add_dead_letter" not in functions(script("take").source)


def test_a_definition_of_another_shape_is_kept():
    odd = (
        "local function flat(x)\nreturn x\nend\n"  # body not indented: not recognised
        "local function spaced(x)\n  local y = x\n\n  return y\nend\n"
        "local function unused_one_liner(x) return x end\n"
        "return 1\n"
    )
    assert functions(prune(odd)) == ["flat"]


def test_each_number_kept_as_text_for_redis_equals_its_number(client):
    """A number Redis receives is written as text in the scripts (a Lua number argument is
    formatted with snprintf on every call): each `NAME_TEXT` must say what `NAME` does."""
    lua_dir = resources.files("rqconc.store").joinpath("lua")
    files = [*lua_dir.iterdir(), *lua_dir.joinpath("include").iterdir()]
    checked = 0
    for path in files:
        if not path.name.endswith(".lua"):
            continue
        source = path.read_text()
        for name, text in re.findall(r"^local (\w+)_TEXT = '([^']*)'", source, re.M):
            number = re.search(rf"^local {name} = ([0-9]+)", source, re.M)
            assert number and number.group(1) == text, (path.name, name)
            checked += 1
    assert checked >= 1  # ENQUEUE_MARK_MS_TEXT at least


def test_the_clock_is_redis_time_in_whole_milliseconds(client):
    """NOW is built from TIME by string operations: it must read as TIME does, to the ms."""
    clock = expand("--#include clock\nreturn NOW")
    for seconds, micros, now in [
        ("1700000000", "5123", "1700000000005"),
        ("1700000000", "0", "1700000000000"),
        ("1700000000", "999999", "1700000000999"),
        ("1700000001", "123456", "1700000001123"),
    ]:
        fixed = clock.replace("redis.call('TIME')", f"{{'{seconds}', '{micros}'}}")
        assert client.eval(fixed, 0).decode() == now
    around = expand("local before = redis.call('TIME')\n--#include clock\n")
    around += "return {before, NOW, redis.call('TIME')}"
    for _ in range(50):
        (s0, u0), now, (s1, u1) = client.eval(around, 0)
        assert int(s0) * 1000 + int(u0) // 1000 <= int(now) <= int(s1) * 1000 + int(u1) // 1000
