"""A step's rarely run functions are made only when one runs (rqconc/store/build/cold)."""

import hashlib
import re
from importlib import resources

import pytest
import redis

from rqconc import Queue
from rqconc.metrics.read import BOUNDS_MS
from rqconc.store import functions
from rqconc.store.build import read
from rqconc.store.build.cold import BUILDER_MARK, COLD_MARK, coldify
from rqconc.store.scripts import CompleteReply, script
from rqconc.store.steps.core import Steps

SOURCE = f"""local NS = ARGV[1]
local function hot(x) return NS .. x end
{COLD_MARK}
local function cold_leaf(x)
  return hot(x) .. '!'
end
{COLD_MARK}
local function cold_root(x) return cold_leaf(x) .. cold_leaf('b') end
{BUILDER_MARK}
local built_before = COLD ~= nil
local result = hot('plain')
if ARGV[2] == 'cold' then result = cold_root('a') end
return {{result, built_before and 1 or 0, COLD ~= nil and 1 or 0}}
"""


def plain(source):
    """The same script as the includes wrote it: every function made on every call."""
    return "\n".join(
        line.replace("COLD ~= nil", "false")
        for line in source.split("\n")
        if line not in (COLD_MARK, BUILDER_MARK)
    )


@pytest.mark.parametrize("path", ["hot", "cold"])
def test_cold_functions_answer_as_before_and_are_made_only_when_one_runs(client, path):
    made = coldify(SOURCE)
    assert "local function cold_leaf(" not in made and "cold().cold_root(" in made
    result, built_before, built = client.eval(made, 0, "ns:", path)
    expected = client.eval(plain(SOURCE), 0, "ns:", path)[0]
    assert result == expected == (b"ns:a!ns:b!" if path == "cold" else b"ns:plain")
    assert built_before == 0
    assert built == (1 if path == "cold" else 0)


def include_sources():
    folder = resources.files("rqconc.store").joinpath("lua").joinpath("include")
    return {p.name: p.read_text() for p in folder.iterdir() if p.name.endswith(".lua")}


def test_the_includes_only_call_their_cold_functions():
    """A cold function passed as a value would be nil where it is passed (it lives in the
    builder's table): each use must be a call, which build/cold.py rewrites."""
    marked = []
    for source in include_sources().values():
        marked += re.findall(rf"^{COLD_MARK}\nlocal function (\w+)\(", source, re.M)
    assert "settle_found_dependents" in marked and "spawn_followups" in marked
    every_step = [
        read(p.name)
        for p in resources.files("rqconc.store").joinpath("lua").iterdir()
        if p.name.endswith(".lua")
    ] + list(include_sources().values())
    for cold in marked:
        for source in every_step:
            code = re.sub(r"--\[\[.*?\]\]|--[^\n]*", "", source, flags=re.S)
            for use in re.finditer(rf"(?<![\w.]){cold}\b(.?)", code):
                assert use.group(1) == "(", (cold, code[use.start() - 40 : use.end() + 10])


def test_a_plain_job_completes_without_making_the_cold_functions(
    redis_url, client, keys, monkeypatch
):
    """complete's builder of cold functions made to fail: a plain job's fused step never
    reaches it, a job with a dependent does."""
    complete = script("complete")
    tripwire = complete.source.replace(
        "  if COLD then return COLD end", "  error('cold functions made')", 1
    )
    assert tripwire != complete.source
    monkeypatch.setattr(complete, "source", tripwire)
    monkeypatch.setattr(complete, "sha", hashlib.sha1(tripwire.encode()).hexdigest())
    queue = Queue("cold", connection=redis_url)
    parent = queue.enqueue("tests.queue.tasks:add", 1, 2)
    queue.enqueue("tests.queue.tasks:add", 3, 4, depends_on=parent)
    queue.enqueue_many([("tests.queue.tasks:add", (1, 2))] * 4, result_ttl=0)
    # The script's path: the library (Redis 7) has no cold builder, since its functions are
    # made once per load (rqconc/store/build/library.py).
    functions.keeps_evalsha(client)
    steps = Steps(client, keys)
    job_id, _ = steps.take("c0", ["cold"], 30_000, "w")
    assert job_id == parent.id
    with pytest.raises(redis.exceptions.ResponseError, match="cold functions made"):
        steps.complete("c0", job_id, "cold", "3", "json", "w")
    client.hdel(keys.job(parent.id), "token")  # the parent aside: plain jobs only from here
    client.delete(keys.claims)
    # A function's first run in a bucket names it (func_label, cold): here, runs before.
    for bound in [*BOUNDS_MS, "inf"]:
        client.hincrby(keys.metrics, f"run:{bound}:cold,tests.queue.tasks:add", 1)
    client.hincrby(keys.metrics, "run_ms:cold,tests.queue.tasks:add", 1)
    job_id, _ = steps.take("c1", ["cold"], 30_000, "w")
    for i in range(2, 5):
        code, (job_id, _) = steps.complete(
            f"c{i - 1}", job_id, "cold", "3", "json", "w", next_take=(f"c{i}", ["cold"], 30_000)
        )
        assert code is CompleteReply.RECORDED
