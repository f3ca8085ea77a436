"""Containers: the worker as PID 1 of a new PID namespace (`unshare --pid --fork
--mount-proc`, as in a container without an init), `--shutdown-timeout` shorter than the
grace period, and `rqconc ping --worker` as the health check."""

import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

from rqconc import Job, JobStatus, Queue
from rqconc.gevent_first import backend_named
from rqconc.worker.registry import list_workers
from tests.cli.test_commands import rqconc
from tests.support.worker_process import BACKENDS, PROCESS_BACKENDS, ROOT, wait_for

# The orphan's own program: a fresh interpreter, as `cmd &` in a shell script forks and execs.
ORPHAN = """
import os, sys, redis
client = redis.Redis.from_url(sys.argv[1])
client.blpop("orphan:go", 10)  # outlive its parent before exiting
client.rpush("orphan:exiting", os.getpid())
"""


def spawn_orphan(url: str) -> int:
    """A job that starts a daemon the way `cmd &` in a shell script does: its parent exits
    at once, so the daemon is re-parented to PID 1; it then exits itself. The daemon execs:
    a forked copy of a gevent worker that did cooperative I/O would run the worker's own
    greenlets (its children's take loops, on the worker's sockets), docs/backends.md."""
    middle = os.fork()
    if middle == 0:
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", ORPHAN, url])
        os._exit(0)
    os.waitpid(middle, 0)
    return middle


def unshare_works() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True
    )
    return probe.returncode == 0


needs_unshare = pytest.mark.skipif(
    not unshare_works(), reason="unshare --pid needs root or user namespaces"
)


class Pid1Worker:
    """`unshare --pid --fork --mount-proc python main.py ...`: the worker is PID 1 inside."""

    def __init__(self, tmp_path, backend, size, url, *extra):
        self.log_path = tmp_path / "pid1-worker.log"
        self._log = open(self.log_path, "wb")
        args = [
            "unshare",
            "--pid",
            "--fork",
            "--mount-proc",
            sys.executable,
            str(ROOT / "main.py"),
            backend,
            str(size),
            "--url",
            url,
            "--allow",
            "tests",
            "--name",
            "pid1",
            *extra,
        ]
        self.unshare = subprocess.Popen(
            args, cwd=ROOT, stdout=self._log, stderr=self._log, start_new_session=True
        )
        # The supervisor as the host sees it: unshare's only child.
        self.supervisor = wait_for(
            lambda: (psutil.Process(self.unshare.pid).children() or [None])[0],
            message="supervisor started",
        )

    def output(self):
        return self.log_path.read_text(errors="replace")

    def descendants(self):
        try:
            return self.supervisor.children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def close(self):
        for proc in [self.supervisor, *self.descendants()]:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        self.unshare.wait(5)
        self._log.close()


@pytest.fixture
def pid1_worker(tmp_path):
    workers = []

    def start(*args):
        worker = Pid1Worker(tmp_path, *args)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.close()


def pool_children(worker):
    """The supervisor's children that are not zombies, leaving out multiprocessing's
    resource tracker."""
    alive = []
    for proc in worker.descendants():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None  # a zombie: not reaped (yet)
            if "resource_tracker" not in " ".join(proc.cmdline()):
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive


def settled_at(worker, count):
    """No zombie and exactly `count` children, from one reading (two readings could disagree:
    a child may be a zombie for a moment between them)."""
    children = pool_children(worker)
    return children is not None and len(children) == count


@needs_unshare
@pytest.mark.parametrize("backend", BACKENDS)
def test_as_pid1_the_worker_reaps_orphans_and_sigterm_is_a_warm_shutdown(
    backend, redis_server, pid1_worker
):
    worker = pid1_worker(backend, 2, redis_server.url)
    wait_for(lambda: "supervisor pid1 started" in worker.output(), message="worker up")
    if backend in PROCESS_BACKENDS:
        assert "pid=1" in worker.output()  # the supervisor really is PID 1 of its namespace
        below = 2  # PID 1's pool children
    else:  # PID 1 is rqconc's init (rqconc/pid1.py); the supervisor runs as its child
        assert f"PID 1 of its namespace: the {backend} worker runs as pid" in worker.output()
        below = 1
    client = redis_server.client()
    q = Queue(connection=redis_server.url)
    q.enqueue("tests.worker.test_pid1:spawn_orphan", redis_server.url).get(timeout=15)
    # The daemon now hangs below PID 1 (its parent exited); let it exit too.
    wait_for(
        lambda: len(pool_children(worker) or []) == below + 1, message="orphan adopted by PID 1"
    )
    client.rpush("orphan:go", 1)
    wait_for(lambda: client.llen("orphan:exiting") == 1, message="orphan exiting")
    # Once it has exited, nothing stays a zombie and only PID 1's own children remain.
    wait_for(
        lambda: settled_at(worker, below),
        timeout=5,
        message=f"orphan reaped, have {worker.descendants()}",
    )

    # A job still running when SIGTERM reaches PID 1 finishes (warm), and only once.
    job = q.enqueue("tests.worker.jobs:nap", 1.0)
    wait_for(lambda: job.status == JobStatus.STARTED, message="job started")
    children = worker.descendants()
    worker.supervisor.send_signal(signal.SIGTERM)
    try:
        code = worker.unshare.wait(15)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running 15 s after SIGTERM:\n{worker.output()[-3000:]}")
    assert code == 0, worker.output()
    assert job.status == JobStatus.FINISHED and job.attempts == 1
    assert worker.output().count("warm shutdown") == 1 and "cold shutdown" not in worker.output()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in children)


def test_a_shutdown_timeout_below_the_grace_period_requeues_the_running_job(
    redis_server, start_worker
):
    worker = start_worker("forking", 2, redis_server.url, "--shutdown-timeout", "1")
    q = Queue(connection=redis_server.url)
    job = q.enqueue("tests.worker.jobs:nap", 30)
    wait_for(lambda: job.status == JobStatus.STARTED, timeout=15, message="job started")
    children = psutil.Process(worker.pid).children()
    began = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert worker.wait_exit(5) == 1  # cold: the timeout expired
    assert time.monotonic() - began < 2.5
    assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children)
    fetched = Job.fetch(job.id, connection=redis_server.url)
    assert (fetched.status, fetched.attempts) == (JobStatus.QUEUED, 0)
    assert q.job_ids == [job.id]
    assert "shutdown timeout of 1.0s expired" in worker.output()


def test_ping_worker_is_the_health_check(redis_server, start_worker):
    url = redis_server.url
    worker = start_worker("threading", 1, url, "--name", "probe-me")
    client = redis_server.client()
    wait_for(
        lambda: [w for w in list_workers(client) if w["name"] == "probe-me"],
        timeout=15,
        message="worker registered",
    )
    assert rqconc("ping", "--worker", "probe-me", "--url", url).returncode == 0
    worker.signal(signal.SIGKILL)
    worker.wait_exit(5)
    # Killed: it still counts as alive until its heartbeat is older than its TTL (420 s by
    # default); age the heartbeat in Redis instead of waiting that long.
    assert rqconc("ping", "--worker", "probe-me", "--url", url).returncode == 0
    key = next(k for k in client.scan_iter("*worker:probe-me"))
    ttl = float(client.hget(key, "ttl"))
    client.hset(key, "last_heartbeat", int((time.time() - ttl - 1) * 1000))
    stale = rqconc("ping", "--worker", "probe-me", "--url", url)
    assert stale.returncode == 1 and "probe-me" in stale.stderr


@pytest.mark.parametrize(
    "argv,positional,backend",
    [
        (["threading", "4", "-q", "a"], True, "threading"),
        (["-b", "gevent", "-n", "2"], False, "gevent"),
        (["-n", "2", "--backend", "threading"], False, "threading"),
        (["--backend=gevent"], False, "gevent"),
        (["-bthreading"], False, "threading"),
        (["-n", "2"], False, None),
    ],
)
def test_the_entry_points_read_the_backend_before_anything_is_imported(argv, positional, backend):
    assert backend_named(argv, positional) == backend
