"""Worker settings from `-c FILE.py`, pyproject's `[tool.rqconc]` and `RQCONC_*` variables
(SPEC section 14): `--print-config` shows the precedence flag > environment > config file >
pyproject > default, a bad file is one line and exit 2, and real workers run jobs with
settings that come only from files."""

import os
import subprocess
import sys
import textwrap

import pytest

from rqconc import JobStatus, Queue
from tests.cli.test_commands import ENTRY
from tests.support.worker_process import ROOT

PASSWORD = "s3cr/et?x"  # '/' and '?' once made redis-py quote the password as a port


def clean_env(**extra):
    """The test's environment without worker settings (RQCONC_HOME kept), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RQCONC_") or k == "RQCONC_HOME"}
    env.pop("REDIS_URL", None)
    return {**env, **extra}


def rqconc(cwd, *args, env=None, timeout=60):
    """`rqconc ARGS` run from `cwd` (where its pyproject.toml is read)."""
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *map(str, args)],
        cwd=cwd,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def printed(output):
    """`--print-config` lines as {setting: (value text, source)}."""
    settings = {}
    for line in output.splitlines():
        if line.startswith("#"):
            continue
        name, _, rest = line.partition(" = ")
        value, _, source = rest.partition("  # ")
        settings[name] = (value, source)
    return settings


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_print_config_shows_each_layer_in_its_precedence(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        """
        [tool.rqconc]
        worker-ttl = 100
        size = 2
        queues = ["from-pyproject"]
        take_wait = 1.5
        strategy = "round-robin"
        """,
    )
    write(
        tmp_path / "settings.py",
        f"""
        WORKER_TTL = 200
        SIZE = 3
        QUEUES = ["a", "b"]
        REDIS_URL = "redis://:{PASSWORD}@localhost:1/0"
        ALLOW = "myapp"
        helper = "lower-case names are not settings"
        """,
    )
    env = clean_env(RQCONC_WORKER_TTL="300", RQCONC_SIZE="4")
    run = rqconc(
        tmp_path, "worker", "-c", "settings.py", "--worker-ttl", "400", "--print-config", env=env
    )
    assert run.returncode == 0, run.stderr
    shown = printed(run.stdout)
    assert shown["worker_ttl"] == ("400.0", "flag")  # all four layers set it
    assert shown["size"] == ("4", "environment RQCONC_SIZE")
    assert shown["queues"] == ('"a,b"', "config file settings.py")
    assert shown["allow"] == ('["myapp"]', "config file settings.py")
    assert shown["take_wait"] == ("1.5", "pyproject.toml [tool.rqconc]")
    assert shown["strategy"] == ('"round-robin"', "pyproject.toml [tool.rqconc]")
    assert shown["callback_timeout"] == ("60.0", "default")
    assert shown["webhook_timeout"] == ("15.0", "default")
    assert shown["backend"] == ('"forking"', "default")
    assert PASSWORD not in run.stdout and "s3cr" not in run.stdout
    assert "***@localhost:1/0" in shown["url"][0]
    assert run.stderr == ""


def test_print_config_shows_the_url_that_will_be_used_and_where_it_came_from(tmp_path):
    """The URL a worker connects to, redacted, with its layer: REDIS_URL sits below every
    rqconc layer (flag, RQCONC_URL, config file, pyproject) and above the embedded server."""
    url = f"redis://:{PASSWORD}@redis.example:6390/2"
    layers = [
        ([], clean_env(REDIS_URL=url), "environment REDIS_URL"),
        ([], clean_env(RQCONC_URL=url, REDIS_URL="redis://other:1/0"), "environment RQCONC_URL"),
        (["--url", url], clean_env(REDIS_URL="redis://other:1/0"), "flag"),
    ]
    for args, env, source in layers:
        run = rqconc(tmp_path, "worker", "--print-config", *args, env=env)
        assert run.returncode == 0, run.stderr
        value, shown_source = printed(run.stdout)["url"]
        assert value.startswith('"redis://') and value.endswith('***@redis.example:6390/2"')
        assert shown_source == source
        assert PASSWORD not in run.stdout + run.stderr and "s3cr" not in run.stdout
    home = tmp_path / "home"
    run = rqconc(tmp_path, "worker", "--print-config", env=clean_env(RQCONC_HOME=str(home)))
    value, source = printed(run.stdout)["url"]
    assert value.startswith('"unix://') and str(home) in value, value
    assert source == "default: the embedded server, started on first use"
    assert not (home / "redis.sock").exists() and "# url:" not in run.stdout


def test_print_config_of_main_py_takes_backend_and_size_as_arguments(tmp_path):
    write(tmp_path / "settings.py", "SIZE = 3\nQUEUES = 'x'\n")
    run = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "threading", "2", "-c", "settings.py"]
        + ["--print-config"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    shown = printed(run.stdout)
    assert shown["size"] == ("2", "argument")
    assert shown["queues"] == ('"x"', "config file settings.py")


@pytest.mark.parametrize(
    "files, args, message",
    [
        ({}, ["-c", "missing.py"], "config file missing.py does not exist"),
        ({"s.py": "SIZE = 'many'\n"}, ["-c", "s.py"], "s.py: SIZE: 'many' is not a valid integer"),
        ({"s.py": "QUEUS = 'a'\n"}, ["-c", "s.py"], "unknown setting 'QUEUS'"),
        ({"s.py": "raise KeyError('x')\n"}, ["-c", "s.py"], "failed: KeyError"),
        ({"pyproject.toml": "[tool.rqconc]\nsize = [\n"}, [], "cannot read"),
        ({"pyproject.toml": "[tool.rqconc]\ntake-wait = 0\n"}, [], "take-wait: 0.0 is not"),
        ({}, ["--worker-ttl", "0"], "Invalid value for '--worker-ttl'"),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(tmp_path, files, args, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    run = rqconc(tmp_path, "worker", *args, "--print-config")
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == ""
    assert len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith("rqconc: error: ") and message in run.stderr, run.stderr


def test_a_worker_runs_a_job_with_settings_from_a_config_file(tmp_path, redis_server):
    q = Queue("from-config", connection=redis_server.url)
    job = q.enqueue("tests.queue.tasks:add", 2, 3)
    write(
        tmp_path / "settings.py",
        f"""
        BACKEND = "threading"
        SIZE = 2
        QUEUES = ["from-config"]
        REDIS_URL = {redis_server.url!r}
        ALLOW = ["tests"]
        PATH = [{str(ROOT)!r}]
        BURST = True
        """,
    )
    run = rqconc(tmp_path, "worker", "--config", "settings.py")
    assert run.returncode == 0, run.stderr
    assert job.get(timeout=5) == 5


def test_a_gevent_worker_runs_a_job_with_settings_from_pyproject(tmp_path, redis_server):
    q = Queue("from-pyproject", connection=redis_server.url)
    job = q.enqueue("tests.queue.tasks:add", 4, 5)
    write(
        tmp_path / "pyproject.toml",
        f"""
        [tool.rqconc]
        backend = "gevent"
        queues = ["from-pyproject"]
        redis-url = "{redis_server.url}"
        allow = ["tests"]
        path = ["{ROOT}"]
        burst = true
        worker-ttl = 33
        """,
    )
    run = rqconc(tmp_path, "worker")
    assert run.returncode == 0, run.stderr
    assert job.get(timeout=5) == 9
    assert job.status is JobStatus.FINISHED
