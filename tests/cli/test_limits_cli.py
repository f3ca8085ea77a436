"""Flow control from the command line (SPEC 11): `rqconc limits QUEUE`, `rqconc pause QUEUE`
/ `rqconc resume QUEUE`, the flow options of `rqconc enqueue`, and misuse (exit 2, one
line, nothing changed)."""

import subprocess
import sys

import pytest
from click.testing import CliRunner

from rqconc import Queue
from rqconc.cli.app import cli
from rqconc.store.keys import KeySpace

ECHO = "tests.queue.tasks:echo"


def run(*argv):
    return CliRunner().invoke(cli, list(map(str, argv)))


def test_limits_sets_shows_and_clears_a_queues_caps(redis_url):
    result = run("limits", "sms", "--url", redis_url, "--concurrency", 3, "--rate", "20/s")
    assert result.exit_code == 0, result.output
    assert "concurrency 3, rate 20/s" in result.output
    run("limits", "sms", "--url", redis_url, "--group-concurrency", 1, "--group-rate", "5/min")
    limits = Queue("sms", redis_url).limits
    assert (limits.concurrency, limits.rate) == (3, "20/s")
    assert (limits.group_concurrency, limits.group_rate) == (1, "5/min")
    shown = run("limits", "sms", "--url", redis_url)
    assert "per group: concurrency 1, rate 5/min" in shown.output
    assert run("limits", "sms", "--url", redis_url, "--clear").exit_code == 0
    assert Queue("sms", redis_url).limits == type(limits)()


def test_pause_and_resume_one_queue_leave_the_workers_alone(redis_url):
    Queue("sms", redis_url).enqueue(ECHO, 1)  # a known queue (an unknown one is warned of)
    assert run("pause", "sms", "--url", redis_url).output == "queue sms paused\n"
    assert Queue("sms", redis_url).is_paused and not Queue("mail", redis_url).is_paused
    assert run("resume", "sms", "--url", redis_url).output == "queue sms resumed\n"
    assert not Queue("sms", redis_url).is_paused
    assert not Queue("sms", redis_url).connection.exists(KeySpace().suspended)


def test_enqueue_takes_the_flow_options(redis_url):
    base = ["enqueue", "-q", "sms", "--url", redis_url]
    first = run(*base, "--unique-key", "k", "--unique-for", 60, "--group", "acme", ECHO, 1)
    again = run(*base, "--unique-key", "k", ECHO, 2)
    assert first.exit_code == 0, first.output
    assert first.output == again.output and Queue("sms", redis_url).count == 1
    job = Queue("sms", redis_url).fetch_job(first.output.strip())
    assert job.field("flow_group") == "acme" and job.field("unique_for") == "60000"
    ttl = run(*base, "--ttl", 5, ECHO)
    assert Queue("sms", redis_url).fetch_job(ttl.output.strip()).field("expires_at")
    debounced = run(*base, "--unique-key", "d", "--debounce", 2, ECHO)
    assert Queue("sms", redis_url).fetch_job(debounced.output.strip()).status == "scheduled"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["limits", "sms", "--rate", "0/s"], "rate"),
        (["limits", "sms", "--rate", "abc"], "rate"),
        (["limits", "sms", "--concurrency", "-1"], "concurrency"),
        (["limits", "sms", "--concurrency", "2", "--clear"], "--clear"),
        (["limits", "a b"], "queue name"),
        (["pause", "a,b"], "queue name"),
        (["enqueue", "-q", "sms", "--unique-for", "5", ECHO], "unique_for needs unique_key"),
        (["enqueue", "-q", "sms", "--ttl", "0", ECHO], "--ttl"),
        (["enqueue", "-q", "sms", "--group", "a{b}", ECHO], "group"),
    ],
)
def test_flow_misuse_is_exit_2_and_changes_nothing(redis_url, argv, message):
    result = CliRunner().invoke(cli, [*argv, "--url", redis_url])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert Queue("sms", redis_url).limits == type(Queue("sms", redis_url).limits)()
    assert Queue("sms", redis_url).count == 0


def test_a_bad_rate_from_the_real_command_is_one_line_and_exit_2(redis_url):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rqconc",
            "limits",
            "sms",
            "--rate",
            "1/fortnight",
            "--url",
            redis_url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("rqconc: error: rate must be like")
    assert len(result.stderr.strip().splitlines()) == 1
