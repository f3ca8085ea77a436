"""SPEC section 14: RQ's dotted function names ("myapp.tasks.send_sms") work wherever
"module:function" does, under the same allow-list."""

import pytest
from click.testing import CliRunner

from rqconc import errors
from rqconc.cli.app import cli
from rqconc.queue.job import JobStatus
from rqconc.queue.queue import Queue
from rqconc.queue.serialization import function_name, resolve_function, split_function_name
from rqconc.queue.workflow.flows import Next
from tests.queue import parity_tasks
from tests.queue.helpers import take_and_run

SEND = "tests.queue.parity_tasks.send_sms"


def test_a_dotted_name_is_stored_as_module_colon_qualname_when_the_producer_finds_it():
    assert function_name(SEND) == "tests.queue.parity_tasks:send_sms"
    assert function_name("tests.queue.parity_tasks.Messages.shout") == (
        "tests.queue.parity_tasks:Messages.shout"
    )
    # A module this producer cannot import (the worker's code) is stored as given.
    assert function_name("workeronly.tasks.send") == "workeronly.tasks.send"
    with pytest.raises(ValueError, match="module:qualname"):
        function_name("send_sms")
    with pytest.raises(ValueError, match="module:qualname"):
        function_name("myapp..send")


def test_the_worker_splits_a_stored_dotted_name_at_its_longest_allowed_module():
    allow = ["tests"]
    assert split_function_name(SEND, allow) == ("tests.queue.parity_tasks", "send_sms")
    name = "tests.queue.parity_tasks.Messages.shout"
    assert split_function_name(name, allow) == ("tests.queue.parity_tasks", "Messages.shout")
    assert resolve_function(name, allow) is parity_tasks.Messages.shout
    # Nothing allowed: the name less its last part, which the allow-list then refuses.
    assert split_function_name("os.path.join", allow) == ("os.path", "join")


def test_a_dotted_name_under_another_allow_list_is_not_imported_through_a_parent():
    # With only tests.queue allowed, "tests.queue.parity_tasks" is the module, never "tests".
    assert split_function_name(SEND, ["tests.queue"]) == ("tests.queue.parity_tasks", "send_sms")
    with pytest.raises(ValueError, match="os is a module"):
        resolve_function("tests.queue.parity_tasks.os.getcwd", ["tests"])
    with pytest.raises(errors.NotAllowed):  # the allowed module's own import of os.getcwd
        resolve_function("tests.queue.parity_tasks.getcwd", ["tests"])


def stored_func(job):
    return job.connection.hget(job.key, "func").decode()


def test_enqueue_cron_callbacks_and_next_accept_dotted_names(redis_url, make_source):
    q = Queue("dotted", connection=redis_url)
    job = q.enqueue(SEND, "+100", "hi", on_success="tests.queue.tasks.note_success")
    entry = q.cron("* * * * *", SEND, "+100", "tick")
    assert entry.func == entry.id == "tests.queue.parity_tasks:send_sms"
    _, fields = Next("dotted", SEND, "+200", "next").prepare(q)
    assert fields["func"] == "tests.queue.parity_tasks:send_sms"
    take_and_run(make_source(["dotted"], allow=["tests"]))
    assert job.get(timeout=5) == "sent 'hi' to +100"
    assert stored_func(job) == "tests.queue.parity_tasks:send_sms"


def test_a_worker_runs_a_job_stored_with_a_dotted_name_and_gives_back_one_not_allowed(
    redis_url, client, make_source
):
    q = Queue("dotted", connection=redis_url)
    job, refused = q.enqueue(SEND, "+1", "a"), q.enqueue("os.path.join", "a", "b")
    # As a producer that could not import the module stores it: the name as given.
    client.hset(job.key, "func", SEND)
    assert stored_func(refused) == "os.path:join"
    client.hset(refused.key, "func", "os.path.join")
    source = make_source(["dotted"], allow=["tests"])
    source.taker.refusals.pause = 0
    take_and_run(source, "c1")
    take_and_run(source, "c2")
    assert job.get(timeout=5) == "sent 'a' to +1"
    # Not allowed: back in the queue, untouched, for a worker that allows module os.path.
    assert refused.refresh() is None and refused.status is JobStatus.QUEUED
    assert refused.attempts == 0 and q.job_ids == [refused.id]
    assert source.runner.not_allowed("os.path.join").module == "os.path"


def test_rqconc_enqueue_takes_a_dotted_name(redis_url, start_worker):
    result = CliRunner().invoke(
        cli, ["enqueue", "-q", "default", "--url", redis_url, SEND, '"+3"', '"x"']
    )
    assert result.exit_code == 0, result.output
    job = Queue(connection=redis_url).fetch_job(result.output.strip())
    assert stored_func(job) == "tests.queue.parity_tasks:send_sms"
    start_worker("threading", 1, redis_url)
    assert job.get(timeout=15) == "sent 'x' to +3"
