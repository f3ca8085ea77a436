"""What `rqconc info`, `rqconc job` and `rqconc server stop` tell an operator (issue 15,
items 6 and 9): a SIGKILLed worker shows `stale`, a global suspension is shown, corrupt
stored data is one line, and stopping the embedded server under workers needs --force."""

import json
import signal

from rqconc import Queue
from rqconc.connection import embedded
from rqconc.store.keys import KeySpace
from tests.cli.test_commands import in_process, rqconc
from tests.support.waiting import wait_for


def workers_of(url):
    result = in_process("info", "-W", "--json", "--url", url)  # polled: in process
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["workers"]


def test_a_sigkilled_worker_shows_stale_long_before_its_ttl(redis_server, start_worker):
    worker = start_worker("threading", 2, redis_server.url)
    wait_for(lambda: workers_of(redis_server.url), timeout=20, message="the worker listed")
    assert workers_of(redis_server.url)[0]["state"] in ("started", "idle")
    worker.signal(signal.SIGKILL)
    listed = wait_for(
        lambda: [w for w in workers_of(redis_server.url) if w["state"] == "stale"],
        timeout=30,
        message="the killed worker shown stale",
    )
    assert listed[0]["pid"] == worker.pid


def test_info_shows_a_global_suspension(redis_server):
    assert "suspended" not in rqconc("info", "--url", redis_server.url).stdout
    assert rqconc("suspend", "--url", redis_server.url).returncode == 0
    shown = in_process("info", "--url", redis_server.url)
    assert shown.stdout.startswith("workers are suspended"), shown.stdout
    assert json.loads(in_process("info", "--json", "--url", redis_server.url).stdout)["suspended"]


def test_job_with_corrupt_stored_data_is_one_line(redis_server):
    job = Queue("q", connection=redis_server.url).enqueue("os:getpid")
    redis_server.client().hset(KeySpace("rqconc").job(job.id), "args", "{not json")
    result = rqconc("job", job.id, "--url", redis_server.url)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"job {job.id} has corrupt stored data" in result.stderr


def test_server_stop_refuses_while_workers_use_it_unless_forced(start_worker):
    url = embedded.ensure_running()
    start_worker("threading", 1, url)
    wait_for(lambda: workers_of(url), timeout=20, message="the worker listed")
    refused = rqconc("server", "stop")
    assert refused.returncode == 1 and "pass --force" in refused.stderr, refused.stderr
    assert embedded.status()["running"]
    forced = rqconc("server", "stop", "--force")
    assert forced.returncode == 0 and "stopped" in forced.stdout, forced.stderr
    assert not embedded.status()["running"]
