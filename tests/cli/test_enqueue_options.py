"""`rqconc enqueue` options of SPEC section 12: --timeout, --retry N, --job-id, --meta JSON,
--kwargs JSON, --namespace; a worker runs what it stored."""

from click.testing import CliRunner

from rqconc import Job, JobStatus, Queue, Retry
from rqconc.cli.app import cli

ECHO = "tests.queue.tasks:echo"


def run(*argv):
    return CliRunner().invoke(cli, ["enqueue", *map(str, argv)])


def test_enqueue_stores_timeout_retry_job_id_meta_and_kwargs(redis_url):
    result = run(
        "-q", "mail", "--url", redis_url, "--timeout", 12.5, "--retry", 3, "--job-id", "mine",
        "--meta", '{"team": "sms"}', "--kwargs", '{"to": "+49", "timeout": 1}', ECHO, 1, '"a"',
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output == "mine\n"
    job = Job.fetch("mine", redis_url)
    assert job.timeout == 12.5 and job.retry == Retry(max=3) and job.meta == {"team": "sms"}
    assert job.args == [1, "a"] and job.kwargs == {"to": "+49", "timeout": 1}


def test_enqueue_refuses_an_existing_job_id_as_misuse(redis_url):
    assert run("-q", "mail", "--url", redis_url, "--job-id", "x", ECHO).exit_code == 0
    again = run("-q", "mail", "--url", redis_url, "--job-id", "x", ECHO)
    assert again.exit_code == 2 and "already exists" in again.output


def test_enqueue_into_a_namespace(redis_url):
    result = run("-q", "mail", "--url", redis_url, "--namespace", "other", ECHO)
    assert result.exit_code == 0, result.output
    assert Queue("mail", redis_url, namespace="other").job_ids == [result.output.strip()]
    assert Queue("mail", redis_url).job_ids == []


def test_bad_meta_kwargs_and_numbers_are_one_line_misuse(redis_url):
    for argv, needle in (
        (["--meta", "[1]"], "not a JSON object"),
        (["--kwargs", "{oops"], "not valid JSON"),
        (["--timeout", "0"], "--timeout"),
        (["--retry", "-1"], "--retry"),
        (["--in", "5", "--kwargs", '{"meta": 1}'], "cannot name enqueue options (meta)"),
    ):
        result = run("-q", "mail", "--url", redis_url, *argv, ECHO)
        assert result.exit_code == 2 and needle in result.output, (argv, result.output)
    assert Queue("mail", redis_url).job_ids == []


def test_a_scheduled_job_keeps_its_kwargs_and_options(redis_url):
    result = run(
        "-q", "mail", "--url", redis_url, "--in", 60, "--timeout", 5, "--kwargs", '{"x": 1}', ECHO
    )  # fmt: skip
    job = Job.fetch(result.output.strip(), redis_url)
    assert job.status is JobStatus.SCHEDULED and job.kwargs == {"x": 1} and job.timeout == 5


def test_a_worker_runs_the_job_with_its_kwargs(redis_url, start_worker):
    result = run("-q", "mail", "--url", redis_url, "--kwargs", '{"k": [1, null]}', ECHO, 7)
    job = Job.fetch(result.output.strip(), redis_url)
    start_worker("threading", 1, redis_url, "-q", "mail")
    assert job.get(timeout=15) == {"args": [7], "kwargs": {"k": [1, None]}}
