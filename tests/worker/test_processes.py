"""`--processes N`: one command line, N whole workers (rqconc/engine/launcher.py), on every
backend; real processes, real signals, real Redis."""

import os
import signal
import subprocess
import sys

import psutil
import pytest

from rqconc import JobStatus, Queue
from rqconc.engine.launcher import PROCESS_MARKER
from rqconc.gevent_first import launches_workers
from rqconc.worker.registry import list_workers
from tests.cli.test_commands import rqconc
from tests.support.worker_process import BACKENDS, ROOT, pid_alive, wait_for


def wait_started(jobs, timeout=20):
    wait_for(
        lambda: all(j.status == JobStatus.STARTED for j in jobs), timeout, message="jobs started"
    )


def workers_of(launcher):
    """The launcher's workers: its direct children (a worker of a process backend has its
    own children below it)."""
    try:
        return psutil.Process(launcher.pid).children()
    except psutil.NoSuchProcess:
        return []


def registered(url):
    return sorted(w["name"] for w in list_workers(Queue(connection=url).connection))


def release(url, key, count):
    client = Queue(connection=url).connection
    for _ in range(count):
        client.rpush(key, "done")


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_workers_run_side_by_side_and_one_ctrl_c_is_one_warm_shutdown(
    backend, redis_server, start_worker
):
    launcher = start_worker(backend, 1, redis_server.url, "--processes", "2", "--name", "pair")
    url = redis_server.url
    q = Queue(connection=url)
    # One child each: two jobs held at once can only mean two workers, one job each.
    held = [q.enqueue("tests.worker.jobs:hold", url, "go") for _ in range(2)]
    wait_started(held)
    assert registered(url) == ["pair-1", "pair-2"]
    wait_for(
        lambda: sorted(len(w["current_jobs"]) for w in list_workers(q.connection)) == [1, 1],
        message="one job in each worker",
    )
    waiting = q.enqueue("tests.worker.jobs:nap", 0)
    # Ctrl+C in a terminal: SIGINT to the launcher's whole process group. Each worker has a
    # group of its own, so it hears it once, from the launcher: warm, not cold.
    launcher.signal_group(signal.SIGINT)
    wait_for(lambda: launcher.output().count("warm shutdown") == 2, message="both workers stopping")
    release(url, "go", 2)
    assert launcher.wait_exit(20) == 0, launcher.output()[-3000:]
    assert [j.status for j in held] == [JobStatus.FINISHED] * 2
    assert [j.attempts for j in held] == [1, 1]
    assert waiting.status == JobStatus.QUEUED  # no new job was taken once stopping
    assert "cold shutdown" not in launcher.output()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_second_signal_is_a_cold_shutdown_of_every_worker_and_their_jobs_go_back(
    backend, redis_server, start_worker
):
    launcher = start_worker(backend, 1, redis_server.url, "--processes", "2")
    q = Queue(connection=redis_server.url)
    running = [q.enqueue("tests.worker.jobs:nap", 30) for _ in range(2)]
    wait_started(running)
    launcher.signal(signal.SIGTERM)
    wait_for(lambda: launcher.output().count("warm shutdown") == 2, message="both workers stopping")
    launcher.signal(signal.SIGTERM)
    assert launcher.wait_exit(5) == 1  # a cold shutdown's code, the highest of the two
    assert [j.status for j in running] == [JobStatus.QUEUED] * 2
    assert [j.attempts for j in running] == [0, 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_worker_outlives_a_sigkilled_launcher(backend, redis_server, start_worker):
    launcher = start_worker(backend, 1, redis_server.url, "--processes", "2")
    q = Queue(connection=redis_server.url)
    running = [q.enqueue("tests.worker.jobs:nap", 30) for _ in range(2)]
    wait_started(running)
    below = psutil.Process(launcher.pid).children(recursive=True)
    assert len(workers_of(launcher)) == 2
    os.kill(launcher.pid, signal.SIGKILL)
    wait_for(
        lambda: not any(pid_alive(p.pid) for p in below),
        timeout=5,
        message="every worker and child of the launcher gone",
    )


def test_a_worker_that_dies_is_started_again_and_serves_the_queue(redis_server, start_worker):
    launcher = start_worker("threading", 1, redis_server.url, "--processes", "2")
    url = redis_server.url
    wait_for(lambda: len(registered(url)) == 2, message="two workers registered")
    victim = workers_of(launcher)[0].pid
    os.kill(victim, signal.SIGKILL)
    wait_for(
        lambda: len(pids := [p.pid for p in workers_of(launcher)]) == 2 and victim not in pids,
        timeout=10,
        message="the killed worker replaced",
    )
    assert f"(pid {victim}) ended with code 137; starting it again" in launcher.output()
    pids = " ".join(str(p) for p in sorted(p.pid for p in workers_of(launcher)))
    assert (
        psutil.Process(launcher.pid).cmdline()[0] == f"rqconc: launcher of 2 workers, pids {pids}"
    )
    q = Queue(connection=url)
    held = [q.enqueue("tests.worker.jobs:hold", url, "go") for _ in range(2)]
    wait_started(held)  # two at once: the new worker runs one of them
    release(url, "go", 2)
    assert [j.get(timeout=20) for j in held] == ["done", "done"]


def test_sigttin_reaches_every_worker(redis_server, start_worker):
    launcher = start_worker("threading", 1, redis_server.url, "--processes", "2")
    client = Queue(connection=redis_server.url).connection

    def idle_children():
        return sorted(w["idle"] for w in list_workers(client))

    wait_for(lambda: idle_children() == [1, 1], message="two workers of one child each")
    launcher.signal(signal.SIGTTIN)  # one more child in each worker
    wait_for(lambda: idle_children() == [2, 2], timeout=15, message="two children each")


def test_burst_workers_drain_the_queue_and_the_launcher_exits_0(redis_server, start_worker):
    q = Queue(connection=redis_server.url)
    jobs = [q.enqueue("tests.worker.jobs:add", n, 1) for n in range(20)]
    launcher = start_worker("gevent", 4, redis_server.url, "--processes", "2", "--burst")
    assert launcher.wait_exit(30) == 0, launcher.output()[-3000:]
    assert [j.return_value for j in jobs] == [n + 1 for n in range(20)]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--processes", "0"], "Invalid value for '--processes'"),
        (["--processes", "2", "--demo", "10"], "--demo runs one worker: drop --processes"),
    ],
)
def test_bad_processes_usage_is_one_line_and_exit_2(args, message, redis_server):
    result = rqconc("worker", "-b", "gevent", "--url", redis_server.url, *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_only_a_launcher_skips_gevent_patching(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here
    monkeypatch.delenv("RQCONC_CONFIG", raising=False)
    monkeypatch.delenv("RQCONC_PROCESSES", raising=False)
    monkeypatch.delenv(PROCESS_MARKER, raising=False)
    assert launches_workers(["gevent", "8", "--processes", "2"])
    assert launches_workers(["-b", "gevent", "--processes=3"])
    assert not launches_workers(["gevent", "8", "--processes", "1"])
    assert not launches_workers(["gevent", "8", "--processes", "two"])  # click refuses it
    assert not launches_workers(["gevent", "8"])
    (tmp_path / "settings.py").write_text("BACKEND = 'gevent'\nPROCESSES = 2\n")
    assert launches_workers(["-b", "gevent", "-c", "settings.py"])
    (tmp_path / "pyproject.toml").write_text("[tool.rqconc]\nprocesses = 3\n")
    assert launches_workers(["gevent", "8"])
    (tmp_path / "pyproject.toml").unlink()
    monkeypatch.setenv("RQCONC_PROCESSES", "2")
    assert launches_workers(["gevent", "8"])
    monkeypatch.setenv(PROCESS_MARKER, "1/2")  # a worker the launcher started
    assert not launches_workers(["gevent", "8", "--processes", "2"])


def test_telling_a_launcher_imports_nothing_gevent_must_patch_first():
    """gevent_first asks the launcher module before gevent patches: in a fresh interpreter,
    that question leaves threading and socket unimported."""
    probe = (
        "import sys\n"
        "from rqconc.gevent_first import launches_workers\n"
        "launches_workers(['gevent', '8', '--processes', '2'])\n"
        "print(sorted({'threading', 'socket', 'selectors'} & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
