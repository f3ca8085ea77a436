"""Errors that name their real cause (issue 15, items 5 and 6): each ends in one line on
stderr, no traceback, no password, and exit 1 (Redis refuses the settings) or 2 (misuse)."""

import math
import subprocess

import pytest

from rqconc import Queue
from rqconc.errors import ConfigurationError
from tests.cli.test_commands import in_process, rqconc
from tests.support.redis_server import RedisServer, free_port
from tests.support.worker_process import main_py_argv

SECRET = "s3cret-pw"


@pytest.fixture(scope="module")
def locked_server(redis_binary):
    server = RedisServer(redis_binary, password=SECRET).start()
    yield server
    server.close()


def one_line_error(args, code):
    result = rqconc(*args)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, (args, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("rqconc: error: "), (args, result.stderr)
    assert "Traceback" not in result.stderr and SECRET not in result.stderr
    return lines[0]


def worker(url, *extra):
    return ["worker", "-b", "threading", "-n", "2", "--url", url, *extra]


def test_wrong_password_ends_the_worker_with_one_line(locked_server):
    wrong = locked_server.url.replace(SECRET, "wrong")
    assert "refused the credentials" in one_line_error(worker(wrong), 1)
    no_password = locked_server.url.replace(f":{SECRET}@", "")
    assert "requires a password" in one_line_error(worker(no_password), 1)


def test_missing_db_index_ends_worker_and_commands_with_one_line(locked_server):
    url = locked_server.url.rsplit("/", 1)[0] + "/99"
    assert "has no database 99" in one_line_error(worker(url), 1)
    assert "has no database 99" in one_line_error(["info", "--url", url], 1)
    with pytest.raises(ConfigurationError, match="has no database 99"):
        Queue("q", connection=url).count  # noqa: B018 - the read raises


@pytest.mark.parametrize(
    "args, says",
    [
        (["-q", "a b"], "invalid queue name 'a b'"),
        (["-q", "ok,a{b}"], "invalid queue name 'a{b}'"),
    ],
)
def test_bad_queue_names_are_misuse(locked_server, args, says):
    assert says in one_line_error(worker(locked_server.url, *args), 2)


@pytest.mark.parametrize(
    "url, says",
    [
        ("redis://[::1", "invalid Redis URL"),
        ("rediss://127.0.0.1:1/0?ssl_cert_reqs=bogus", "invalid TLS options"),
    ],
)
def test_malformed_url_and_tls_options_are_misuse(url, says):
    assert says in one_line_error(worker(url), 2)


@pytest.mark.parametrize(
    "backend, size, bound",
    [("threading", 1001, "1000 threads"), ("gevent", 10_001, "10000 greenlets")],
)
def test_sizes_above_the_bound_are_refused_with_the_reason(backend, size, bound):
    line = one_line_error(["worker", "-b", backend, "-n", str(size)], 2)
    assert f"at most {bound}" in line


def test_processes_are_bounded_too():
    line = one_line_error(["worker", "-b", "forking", "-n", "100000"], 2)
    assert "processes (4 per CPU, at least 256)" in line


def test_enqueue_in_a_huge_delay_is_misuse(locked_server):
    args = ["enqueue", "--url", locked_server.url, "-q", "q", "--in", "1e308", "os:getpid"]
    assert "lies past the year 9999" in one_line_error(args, 2)
    with pytest.raises(ValueError, match="past the year 9999"):
        Queue("q", connection=locked_server.url).enqueue_in(1e308, "os:getpid")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_arguments_are_refused_naming_the_value(locked_server, value):
    queue = Queue("q", connection=locked_server.url)
    with pytest.raises(ValueError, match="NaN or Infinity") as caught:
        queue.enqueue("os:getpid", {"x": [value]})
    assert repr(value) in str(caught.value)
    assert queue.count == 0


# ---- issue 32, item 6: what used to succeed silently, or print click's layout ----


def test_main_py_without_arguments_is_one_line_naming_the_backends():
    argv = main_py_argv("forking", 1)[:2]  # python main.py, nothing else
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "\\n" not in lines[0] and "\\t" not in lines[0], lines[0]
    assert "Choose from: forking, multiprocessing, threading, gevent, asyncio" in lines[0]


def test_a_path_that_is_not_there_is_misuse():
    url = f"redis://127.0.0.1:{free_port()}"  # never reached: misuse is said first
    line = one_line_error(["worker", "--path", "/nonexistent/app", "--url", url], 2)
    assert "'/nonexistent/app' does not exist" in line, line


def test_info_of_a_queue_that_never_received_a_job_warns_and_shows_it(redis_url):
    Queue("emails", connection=redis_url).enqueue("tests.worker.jobs:add", 1, 2)
    done = rqconc("info", "emials", "--url", redis_url)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == (
        "rqconc: warning: no job ever entered queue 'emials' of namespace rqconc "
        "(its queues: emails); its counts are all 0"
    )
    assert "emials" in done.stdout
    assert in_process("info", "emails", "--url", redis_url).stderr == ""


def test_resume_of_a_queue_that_is_not_paused_and_never_used_is_misuse(redis_url):
    Queue("emails", connection=redis_url).enqueue("tests.worker.jobs:add", 1, 2)
    line = one_line_error(["resume", "emials", "--url", redis_url], 2)
    assert "queue 'emials' is not paused: no job ever entered queue 'emials'" in line, line
    assert "(its queues: emails)" in line
    done = in_process("resume", "emails", "--url", redis_url)
    assert done.returncode == 0 and done.stdout == "queue emails is not paused; nothing to resume\n"
    # Pausing ahead of a queue's first job is legitimate: done, with a warning.
    done = rqconc("pause", "later", "--url", redis_url)
    assert done.returncode == 0 and done.stdout == "queue later paused\n"
    assert (
        "warning: no job ever entered queue 'later'" in done.stderr
        and "paused anyway" in done.stderr
    )
    done = in_process("resume", "later", "--url", redis_url)
    assert done.returncode == 0 and done.stdout == "queue later resumed\n", done.stderr
