"""The steps as one Redis Functions library (rqconc/store/build/library.py, store/functions.py):
Redis 7 runs every step by FCALL, 6.2 by EVALSHA; a server that lost the library loads it
again on the next step; a user whose ACL refuses functions keeps EVALSHA; the library is built
from the same files by the same passes as the scripts, and what a call must start afresh is
reset on each call."""

import re
from importlib import resources

import pytest
import redis

from rqconc import Queue
from rqconc.connection.direct import DirectConnection
from rqconc.store import functions
from rqconc.store.build import build, library_prefix, read, step_names
from rqconc.store.build.include import INCLUDE_END, INCLUDED
from rqconc.store.build.library import PER_CALL, library, step_block
from rqconc.store.build.print_lua import main
from rqconc.store.scripts import CompleteReply, script
from rqconc.store.steps.core import Steps
from tests.support.lua_calls import has_functions

LEASE_MS = 30_000
_FUNCTION = re.compile(r"^local function (\w+)\(", re.M)


def calls(client):
    stats = client.info("commandstats")
    return {name: stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("evalsha", "fcall")}


def libraries(client):
    """The names of the libraries FUNCTION LIST shows (each entry: name/value pairs)."""
    return [dict(zip(e[::2], e[1::2]))[b"library_name"].decode() for e in client.function_list()]


def run_two_jobs(queue, steps):
    """Enqueue, take, complete + take, complete: the hot steps."""
    queue.enqueue("tests.queue.tasks:add", 1, 2)
    queue.enqueue("tests.queue.tasks:add", 3, 4)
    job_id, _ = steps.take("c1", ["default"], LEASE_MS, "w")
    code, (job_id, _) = steps.complete(
        "c1", job_id, "default", "3", "json", "w", next_take=("c2", ["default"], LEASE_MS)
    )
    assert code is CompleteReply.RECORDED
    assert steps.complete("c2", job_id, "default", "7", "json", "w") is CompleteReply.RECORDED


def test_redis_7_runs_every_step_by_fcall_and_6_2_by_evalsha(queue, steps, client):
    client.config_resetstat()
    run_two_jobs(queue, steps)
    ran = calls(client)
    if has_functions(client):
        # The two enqueues stay on EVALSHA (functions.EVALSHA_STEPS; one more call when the
        # first is refused NOSCRIPT); take and completes by FCALL (failed calls counted too).
        assert ran["evalsha"] in (2, 3) and ran["fcall"] >= 3, ran
        assert functions.path_of(steps.client) is True
        assert set(libraries(client)) == {script(n).function for n in ("take", "complete")}
    else:
        assert ran["fcall"] == 0 and ran["evalsha"] >= 5, ran
        assert functions.path_of(steps.client) is False


def test_a_server_that_lost_the_steps_loads_them_again_on_the_next_step(queue, client, keys):
    """FUNCTION FLUSH (7) or SCRIPT FLUSH (6.2) on a live server, between the steps of a
    worker's direct connection: the plain take reloads; a pipelined marker wait and take
    finds nothing loaded, takes nothing and leaves the job waiting for the next take."""
    steps = Steps(DirectConnection(client), keys)
    run_two_jobs(queue, steps)
    job = queue.enqueue("tests.queue.tasks:add", 5, 6)
    flush = client.function_flush if has_functions(client) else client.script_flush
    flush()
    if has_functions(client):
        assert client.function_list() == []
        assert steps.wait_then_take(0.1, "c3", ["default"], LEASE_MS, "w") == -1
    assert queue.job_ids == [job.id]
    assert steps.take("c4", ["default"], LEASE_MS, "w")[0] == job.id
    flush()
    assert steps.complete("c4", job.id, "default", "11", "json", "w") is CompleteReply.RECORDED
    if has_functions(client):
        assert libraries(client) == [script("complete").function]  # flushed after the take
        assert functions.path_of(steps.client) is True


def test_a_user_whose_acl_refuses_functions_keeps_evalsha(redis_url, client):
    if not has_functions(client):
        pytest.skip("Redis 6.2 has no functions: every client keeps EVALSHA (test above)")
    client.execute_command(
        "ACL", "SETUSER", "nofunctions", "on", ">secret", "~*", "&*", "+@all", "-fcall",
        "-function",
    )  # fmt: skip
    client.function_flush()
    url = redis_url.replace("redis://", "redis://nofunctions:secret@", 1)
    user = redis.Redis.from_url(url)
    client.config_resetstat()
    run_two_jobs(Queue("default", connection=url), Steps(user, Queue("default").keys))
    ran = calls(client)
    assert ran["evalsha"] >= 5, ran
    assert client.function_list() == []


@pytest.mark.parametrize("name", step_names())
def test_every_step_has_a_library_and_print_lua_prints_it(name, capsys):
    text = functions.text(name)
    function = f"{functions.prefix()}_{name}"
    called = None if name in functions.EVALSHA_STEPS else function
    assert script(name).function == called
    assert text.startswith(f"#!lua name={function}\n")
    assert f"redis.register_function(LIBRARY .. '_{name}', function(keys, args)" in text
    assert main([name, "--library", "--raw"]) == 0
    assert capsys.readouterr().out == text
    assert main([name, "--library"]) == 0
    first, *numbered = capsys.readouterr().out.rstrip("\n").split("\n")
    assert function in first
    assert numbered[0].endswith(f"  #!lua name={function}")


def test_a_step_block_defines_what_its_script_defines_and_runs_its_own_lines():
    """Same includes, same pruned functions (the cold ones as plain ones), same own code."""
    for name in ("complete", "take", "enqueue", "complete_many", "take_many"):
        block = step_block(name, read)
        built = build(name)
        assert set(_FUNCTION.findall(block)) - {"main"} == set(_FUNCTION.findall(built)) | set(
            re.findall(r"^  C\.(\w+) = function\(", built, re.M)
        )
        own = read(f"{name}.lua").split("--#include")[-1].split("\n", 1)[1].strip()
        main_body = block.split("local function main()\n", 1)[1]
        assert own.split("\n")[-1] in main_body.split("\nend\nredis.register_function")[0]


def test_what_a_call_starts_afresh_is_marked_and_the_rest_is_constant():
    """Every top-level statement of an include that is neither a function nor in a
    `--#per-call` part is a constant: one call cannot leave anything there for the next."""
    constant = re.compile(r"^local [\w, ]+ = [-\w\d\s.,*+'()]+(\s+--.*)?$")
    for include in sorted(p for p in _includes()):
        source = read(f"include/{include}.lua")
        marked, in_function, in_comment = False, False, False
        for line in source.split("\n"):
            if in_comment:
                in_comment = "]]" not in line
                continue
            if line.startswith("--[["):
                in_comment = "]]" not in line
                continue
            if line.startswith(PER_CALL):
                marked = True
                continue
            if not line.strip():
                marked = False
                continue
            if marked or line.startswith(("--", " ", "\t")):
                continue
            if in_function:
                in_function = line.rstrip() != "end"
                continue
            if line.startswith("local function "):
                in_function = not line.rstrip().endswith(" end")
                continue
            assert constant.match(line), (include, line)
    assert PER_CALL in read("include/state.lua") and PER_CALL in read("include/clock.lua")


def test_the_library_is_named_by_what_it_is_built_from():
    name = library_prefix()
    assert name == functions.prefix() and re.fullmatch(r"rqconc_[0-9a-f]{16}", name)
    text = library("rqconc_x", "save_meta", read)
    assert INCLUDE_END.format("x") not in text and INCLUDED.format("x") not in text


def test_key_names_built_inside_the_library_match_keyspace(client, keys):
    """tests/store/test_lua_steps.py's drift test, through a library block built by the same
    passes: the names keys.lua makes in a function are keys.py's."""
    if not has_functions(client):
        pytest.skip("Redis 6.2 has no functions (the script's names: test_lua_steps.py)")
    snippet = (
        "--[[ drift: the names of keys.lua ]]\n"
        "--#context NS=ARGV[1] NOW='0'\n--#include keys\n"
        "return {job_key('j'), queue_key('q'), marker_key('q'), scheduled_key('q'), "
        "started_key('q'), deferred_key('q'), done_key('j'), dependents_key('j'), "
        "group_key('g')}"
    )

    def reading(relative):
        return snippet if relative == "drift.lua" else read(relative)

    client.function_load(library("rqconc_test", "drift", reading), replace=True)
    built = [b.decode() for b in client.fcall("rqconc_test_drift", 0, keys.prefix)]
    client.function_delete("rqconc_test_drift")
    assert built == [
        keys.job("j"),
        keys.queue("q"),
        keys.marker("q"),
        keys.scheduled("q"),
        keys.started("q"),
        keys.deferred("q"),
        keys.done("j"),
        keys.dependents("j"),
        keys.group("g"),
    ]


def _includes():
    folder = resources.files("rqconc.store").joinpath("lua").joinpath("include")
    return [p.name[: -len(".lua")] for p in folder.iterdir() if p.name.endswith(".lua")]
