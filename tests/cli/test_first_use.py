"""A new user's first steps (issue 15, items 1 and 12): the worker finds the user's code in
the directory it runs from, on every backend, through the installed console script; the
command line's version, `python -m rqconc`, backend choices, hidden test options and
options from `RQCONC_` environment variables."""

import os
import re
import subprocess
import sys
from importlib.metadata import metadata, version
from pathlib import Path

import pytest

from rqconc import JobStatus, Queue, __version__
from tests.support.worker_process import BACKENDS, ROOT, main_py_argv

CONSOLE_SCRIPT = Path(sys.executable).parent / "rqconc"
TASKS = """
import gevent.monkey


def hello(name):
    return f"hello {name}"


def socket_is_patched():
    return gevent.monkey.is_module_patched("socket")


async def coroutine_job():
    return "awaited"
"""


@pytest.fixture
def app_dir(tmp_path):
    """A user's project: `myapp/tasks.py`, importable only from this directory."""
    root = tmp_path / "project"
    (root / "myapp").mkdir(parents=True)
    (root / "myapp" / "__init__.py").write_text("")
    (root / "myapp" / "tasks.py").write_text(TASKS)
    return root


def user_env(**extra):
    """The environment of a user's shell: no REDIS_URL, nothing of ours on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RQCONC_") or k == "RQCONC_HOME"}
    env.pop("REDIS_URL", None)
    env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


def run(argv, cwd, env=None, timeout=150):
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env or user_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def console_script():
    if not CONSOLE_SCRIPT.exists():
        pytest.skip("no installed rqconc console script beside this interpreter")
    return str(CONSOLE_SCRIPT)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_installed_worker_runs_jobs_of_the_directory_it_runs_from(
    backend, app_dir, redis_server
):
    job = Queue("default", connection=redis_server.url).enqueue("myapp.tasks:hello", "you")
    argv = [console_script(), "worker", "-b", backend, "-n", "1", "--burst"]
    done = run([*argv, "--allow", "myapp", "--url", redis_server.url], cwd=app_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert job.status == JobStatus.FINISHED, job.exc_info
    assert job.return_value == "hello you"


@pytest.mark.timeout(180)
def test_path_puts_a_directory_on_sys_path_for_main_py(app_dir, redis_server, tmp_path):
    job = Queue("default", connection=redis_server.url).enqueue("myapp.tasks:hello", "py")
    argv = main_py_argv("multiprocessing", 1, "--burst", "--allow", "myapp")
    done = run([*argv, "--path", str(app_dir), "--url", redis_server.url], cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert job.return_value == "hello py"


def test_worker_options_come_from_rqconc_environment_variables(app_dir, redis_server):
    """RQCONC_BACKEND=gevent also makes the console script patch first, as `-b gevent` does."""
    job = Queue("env-q", connection=redis_server.url).enqueue("myapp.tasks:socket_is_patched")
    env = user_env(
        RQCONC_BACKEND="gevent",
        RQCONC_QUEUES="env-q",
        RQCONC_BURST="1",
        RQCONC_ALLOW="myapp",
        RQCONC_URL=redis_server.url,
    )
    done = run([console_script(), "worker"], cwd=app_dir, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert job.return_value is True


def test_the_cli_hint_for_a_module_not_allowed_names_the_option(app_dir, redis_server):
    job = Queue("default", connection=redis_server.url).enqueue("myapp.tasks:hello", "x")
    argv = [console_script(), "worker", "-b", "threading", "--burst", "--url", redis_server.url]
    done = run(argv, cwd=app_dir)
    # Issue 32: the job waits for a worker that allows it; this one stops, saying what to add.
    assert done.returncode == 2, done.stderr[-3000:]
    assert job.status == JobStatus.QUEUED and job.attempts == 0
    assert "start the worker with --allow myapp (for myapp.tasks:hello)" in done.stderr


def test_an_async_def_job_enqueued_by_name_is_awaited(app_dir, redis_server):
    job = Queue("default", connection=redis_server.url).enqueue("myapp.tasks:coroutine_job")
    argv = [console_script(), "worker", "-b", "forking", "--burst", "--allow", "myapp"]
    done = run([*argv, "--url", redis_server.url], cwd=app_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    assert job.status == JobStatus.FINISHED and job.return_value == "awaited"
    assert "never awaited" not in done.stderr


@pytest.mark.parametrize(
    "entry", [["{script}"], [sys.executable, "-m", "rqconc"]], ids=["script", "python-m"]
)
def test_version_prints_one_line(entry, tmp_path):
    argv = [part.format(script=CONSOLE_SCRIPT) for part in entry]
    if argv[0] == str(CONSOLE_SCRIPT):
        console_script()
    done = run([*argv, "--version"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"rqconc, version {__version__}\n"


def test_python_m_rqconc_runs_the_command_line(tmp_path):
    done = run([sys.executable, "-m", "rqconc", "worker", "--help"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: rqconc worker")


def test_worker_help_hides_the_test_only_fake_source():
    done = run([sys.executable, str(ROOT / "main.py"), "--help"], cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "--path" in done.stdout and "RQCONC_QUEUES" in done.stdout
    assert "--source" not in done.stdout and "fake" not in done.stdout


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "rqconc", "worker", "-b", "nope"],
        [sys.executable, str(ROOT / "main.py"), "nope", "1"],
    ],
    ids=["rqconc-worker", "main.py"],
)
def test_an_unknown_backend_is_refused_with_the_choices_in_one_line(argv, tmp_path):
    done = run(argv, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr.count("\n") == 1
    assert "'nope' is not one of 'forking', 'multiprocessing', 'threading', 'gevent'" in (
        done.stderr
    )


def test_the_metadata_names_the_license_python_versions_and_a_tested_redis_range():
    meta = metadata("rqconc")
    assert meta["License"] == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in range(9, 13)} <= set(
        meta.get_all("Classifier")
    )
    (redis_requirement,) = [r for r in meta.get_all("Requires-Dist") if re.match(r"redis[<>=]", r)]
    upper = int(redis_requirement.split("<")[1].split(",")[0])
    assert int(version("redis").split(".")[0]) < upper  # the installed one is inside it


def test_shell_completion_offers_the_backends(tmp_path):
    env = user_env(COMP_WORDS="rqconc worker -b ", COMP_CWORD="3")
    env["_RQCONC_COMPLETE"] = "bash_complete"
    done = run([sys.executable, "-m", "rqconc"], cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"plain,{name}" for name in BACKENDS]
