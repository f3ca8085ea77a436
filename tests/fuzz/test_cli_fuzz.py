"""Random command lines for `rqconc` (SPEC sections 4 and 7): exit code 0, 1 or 2 only, never a
traceback; random JSON to `rqconc enqueue`: stored exactly, or refused with exit 2.

The hypothesis examples call the CLI's real entry point in-process (`rqconc.cli.app.main`, the
code the console script runs after its gevent check) so that many fit in the time budget; a
few fixed command lines run as real `rqconc` subprocesses besides.
"""

import contextlib
import io
import json
import os
import subprocess
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rqconc import Job
from rqconc.cli.app import main
from tests.fuzz.conftest import PROPERTY_TIMEOUT
from tests.support.redis_server import free_port

pytestmark = pytest.mark.fuzz

WORDS = [
    "info",
    "-W",
    "--json",
    "suspend",
    "resume",
    "--duration",
    "requeue",
    "--all",
    "failed",
    "list",
    "show",
    "purge",
    "enqueue",
    "-q",
    "--queue",
    "--priority",
    "--in",
    "--at",
    "job",
    "cancel",
    "events",
    "-n",
    "--lines",
    "--job",
    "ping",
    "--worker",
    "server",
    "status",
    "cron",
    "remove",
    "--url",
    "-h",
    "--help",
    "--version",
    "fuzz",
    "tests.fuzz.jobs:echo",
    "os:system",
    "nope:nope",
    "-1",
    "0",
    "1",
    "101",
    "1e9",
    "nan",
    "inf",
    "-0.5",
    "2026-13-45T99:99",
    "2026-01-01T00:00:00",
    "[]",
    "{}",
    "null",
    '"x"',
    "[1,",
    '{"a":',
    "\u00e9\u4e2d\U0001f600",
    "",
    " ",
    "--",
    "-",
    "=",
    "redis://",
    "rediss://[::1",
    "unix://",
    "http://x",
    "redis://:pw@127.0.0.1:1/0",
    "redis://127.0.0.1:99999/0",
    "redis://127.0.0.1:1/abc",
]
# Commands that block by design (a worker, events --follow, a server in the foreground).
BLOCKING = {"worker", "--follow", "start"}
tokens = st.one_of(st.sampled_from(WORDS), st.text(max_size=12))


argv = st.lists(tokens, max_size=7).filter(
    lambda args: (
        not any(
            a in BLOCKING or (a.startswith("-") and not a.startswith("--") and "f" in a)
            for a in args
        )
    )
)


@pytest.fixture(scope="module")
def live_url(redis_binary):
    from tests.support.redis_server import RedisServer

    server = RedisServer(redis_binary).start()
    yield server.url
    server.close()


def _run(args, env_url):
    """(exit code, stdout, stderr) of `rqconc ARGS` in-process; any exception but SystemExit
    is what a user would see as a traceback."""
    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("REDIS_URL")
    os.environ["REDIS_URL"] = env_url  # never the embedded server (nor :6379)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(list(args))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        if saved is None:
            os.environ.pop("REDIS_URL", None)
        else:
            os.environ["REDIS_URL"] = saved
    return code, out.getvalue(), err.getvalue()


@pytest.mark.timeout(PROPERTY_TIMEOUT)
@given(argv)
@example(["enqueue", "-q", "fuzz", "tests.fuzz.jobs:echo", "[1,"])
@example(["info", "--url", "redis://127.0.0.1:99999/0"])
@example(["suspend", "--duration", "0.5"])
@example(["enqueue", "-q", "f u z z", "tests.fuzz.jobs:echo", "1"])
@example(["enqueue", "-q", "fuzz", "--at", "2026-13-45T99:99", "tests.fuzz.jobs:echo", "1"])
@example(["job", "\u00e9\u4e2d\U0001f600"])
@example(["resume", "line\x1cbreaks\nin\u2028an argument"])  # echoed in the error: escaped
def test_random_command_lines_exit_0_1_or_2_without_traceback(live_url, args):
    code, _out, err = _run(args, live_url)
    assert code in (0, 1, 2), (args, code, err)
    assert "Traceback" not in err, (args, err)
    if code:
        assert err.strip(), (args, code)  # a failure always says why, in one line
        # One line, except a bare group (`rqconc`, `rqconc failed`) that shows its usage.
        assert len(err.strip().splitlines()) <= 2 or "Usage:" in err, (args, err)


@pytest.mark.timeout(PROPERTY_TIMEOUT)
@given(argv)
def test_random_command_lines_against_an_unreachable_redis(args):
    dead = f"redis://:s3cret-pw@127.0.0.1:{free_port()}/0"
    code, out, err = _run(args, dead)
    assert code in (0, 1, 2), (args, code, err)
    assert "Traceback" not in err
    assert "s3cret-pw" not in out + err


def _not_json(constant):
    # Python's json reads NaN and Infinity, which JSON has no numbers for: refused (SPEC 4).
    raise ValueError(f"{constant} is not JSON")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.timeout(PROPERTY_TIMEOUT)
@given(
    st.lists(
        st.one_of(
            json_values.map(lambda v: json.dumps(v, ensure_ascii=False)), st.text(max_size=20)
        ),
        min_size=0,
        max_size=4,
    )
)
def test_enqueue_takes_any_json_argument_and_refuses_the_rest(live_url, raw_args):
    # "--" so that text starting with "-" is an argument too (a negative number is one even
    # without it: test_enqueue_negative_number_argument).
    code, out, err = _run(
        ["enqueue", "-q", "fuzz", "tests.fuzz.jobs:echo", "--", *raw_args], live_url
    )
    try:
        expected = [json.loads(a, parse_constant=_not_json) for a in raw_args]
    except ValueError:
        expected = None
    if expected is None:
        assert code == 2, (raw_args, code, err)
        assert "Traceback" not in err and err.strip()
        return
    assert code == 0, (raw_args, err)
    job_id = out.strip()
    assert job_id and "\n" not in job_id  # the id alone on stdout
    job = Job.fetch(job_id, connection=live_url)
    assert job.args == expected


@pytest.mark.parametrize(
    "args",
    [
        ["enqueue", "-q", "fuzz", "tests.fuzz.jobs:echo", "{bad json"],
        ["info", "--url", "rediss://[::1"],
        ["--no-such-option"],
        ["failed", "show"],
        ["requeue"],
    ],
)
def test_real_console_script_misuse(args):
    script = os.path.join(os.path.dirname(sys.executable), "rqconc")
    env = dict(os.environ, REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    result = subprocess.run([script, *args], capture_output=True, text=True, timeout=30, env=env)
    assert result.returncode in (1, 2), result
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "1e-9"])
def test_suspend_duration_out_of_range_is_misuse(live_url, value):
    script = os.path.join(os.path.dirname(sys.executable), "rqconc")
    result = subprocess.run(
        [script, "suspend", "--duration", value, "--url", live_url],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "Traceback" not in result.stderr, result.stderr[-500:]
    assert result.returncode == 2


def test_enqueue_negative_number_argument(live_url):
    code, out, err = _run(["enqueue", "-q", "fuzz", "tests.fuzz.jobs:echo", "-5", "1.5"], live_url)
    assert code == 0, err
    assert Job.fetch(out.strip(), connection=live_url).args == [-5, 1.5]
