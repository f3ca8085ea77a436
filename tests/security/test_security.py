"""Security: credentials, ACL users, TLS, secrets kept out of output, pickle and the allow-list
(SPEC section 4). Every test drives a real redis-server and, where it says so, a real worker.
"""

import base64
import os
import pickle
import signal
import subprocess
import sys

import pytest
import redis

from rqconc import JobStatus, Queue
from rqconc.connection.clients import connect
from rqconc.errors import JobFailed
from rqconc.worker.registry import list_workers
from tests.security.conftest import ADMIN_PASSWORD, USER_PASSWORD, cannot_touch, user_url
from tests.support.redis_server import free_port
from tests.support.waiting import wait_for
from tests.support.worker_process import ROOT

pytestmark = pytest.mark.security


def _cli(*args, env=None):
    """`rqconc ARGS...` as users run it (the console script of the package)."""
    script = os.path.join(os.path.dirname(sys.executable), "rqconc")
    return subprocess.run(
        [script, *args], cwd=ROOT, capture_output=True, text=True, timeout=30, env=env
    )


# ---- ACL user limited to the key prefix ----
def test_worker_runs_jobs_as_an_acl_user_confined_to_the_prefix(acl_redis, start_worker):
    url = user_url(acl_redis)
    cannot_touch(url, "outside:the:prefix")  # the restriction is real
    queue = Queue("sec", connection=url)
    jobs = [queue.enqueue("tests.worker.jobs:add", i, 1) for i in range(5)]
    worker = start_worker("threading", 2, url, "-q", "sec")
    assert [job.get(timeout=20) for job in jobs] == [1, 2, 3, 4, 5]
    # Nothing rqconc wrote lies outside its prefix.
    admin = acl_redis.client()
    assert all(key.startswith(b"{rqconc}:") for key in admin.keys("*"))
    worker.signal(15)
    assert worker.wait_exit(10) == 0
    log = worker.output()
    assert "NOPERM" not in log and "Traceback" not in log, log[-3000:]
    assert USER_PASSWORD not in log


def test_wrong_password_is_one_clear_line_without_the_password(acl_redis):
    wrong = "not-the-Right-0ne-5d7a"
    result = _cli("info", "--url", user_url(acl_redis, password=wrong))
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    assert wrong not in result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


# ---- no password in any output ----
def test_no_password_in_any_worker_or_cli_output(acl_redis, tmp_path):
    """A worker and CLI commands with a password URL, working and failing (Redis down, bad
    password, bad command): the password never shows, not even percent-encoded."""
    secret = ADMIN_PASSWORD
    good = f"redis://:{secret}@127.0.0.1:{acl_redis.port}/0"
    down = f"redis://:{secret}@127.0.0.1:{free_port()}/0"
    bad = f"redis://rq:{secret}@127.0.0.1:{acl_redis.port}/0"  # right password, wrong user
    enqueue = ["enqueue", "-q", "sec", "tests.worker.jobs:add", "1", "2"]
    runs = [
        (good, ["info", "-W", "--json"]),
        (good, enqueue),
        (good, ["job", "nope"]),
        (down, ["info"]),
        (down, enqueue),
        (down, ["ping"]),
        (bad, ["info"]),
        (bad, ["failed", "list"]),
    ]
    outputs = []
    for url, args in runs:
        result = _cli(*args, "--url", url)
        outputs.append((args, url, result.returncode, result.stdout + result.stderr))
        assert result.returncode in (0, 1, 2), (args, result)
        assert "Traceback" not in result.stderr, (args, result.stderr)
    # A worker that cannot reach Redis logs each retry with the URL: redacted.
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:
        worker = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "main.py"),
                "threading",
                "2",
                "--url",
                down,
                "--log-level",
                "DEBUG",
            ],
            cwd=ROOT,
            stdout=log,
            stderr=log,
        )
        try:
            wait_for(
                lambda: log_path.read_text().count("cannot reach Redis") >= 2,
                timeout=15,
                message="the worker to log its retries",
            )
        finally:
            worker.terminate()
            worker.wait(10)
    # And a working one, with a job that fails (its error message is logged).
    with open(tmp_path / "worker-good.log", "wb") as log:
        worker = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "main.py"),
                "threading",
                "2",
                "--url",
                good,
                "-q",
                "sec",
                "--allow",
                "tests",
                "--burst",
                "--log-level",
                "DEBUG",
            ],
            cwd=ROOT,
            stdout=log,
            stderr=log,
        )
        assert worker.wait(30) == 0
    everything = (
        "\n".join(o[3] for o in outputs)
        + log_path.read_text()
        + (tmp_path / "worker-good.log").read_text()
    )
    assert "cannot reach Redis" in everything and "refused the credentials" in everything
    for form in (secret, secret.replace("-", "%2D"), base64.b64encode(secret.encode()).decode()):
        assert form not in everything, [o[:3] for o in outputs if form in o[3]]


# ---- TLS ----
def test_client_api_and_worker_over_tls(tls_redis, start_worker):
    port, ca = tls_redis
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}"
    # The server speaks TLS only: a plain client cannot talk to it.
    with pytest.raises(redis.exceptions.ConnectionError):
        redis.Redis(port=port, socket_timeout=2, socket_connect_timeout=2).ping()
    queue = Queue("tls", connection=url)
    jobs = [queue.enqueue("tests.worker.jobs:add", i, i) for i in range(3)]
    start_worker("gevent", 4, url, "-q", "tls")
    assert [job.get(timeout=20) for job in jobs] == [0, 2, 4]
    info = _cli("info", "--json", "--url", url)
    assert info.returncode == 0, info.stderr


def test_tls_with_an_unknown_ca_is_refused_clearly(tls_redis, tmp_path):
    port, _ca = tls_redis
    result = _cli("info", "--url", f"rediss://127.0.0.1:{port}/0")  # system CAs only
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"rediss://127.0.0.1:{port}" in result.stderr


# ---- pickle ----
def test_json_queue_refuses_what_only_pickle_could_carry(redis_server):
    queue = Queue("sec", connection=redis_server.url)
    with pytest.raises(TypeError, match="pickle"):
        queue.enqueue("tests.worker.jobs:add", {1, 2}, 3)
    assert redis_server.client().keys("*") == []  # nothing written
    opted = Queue("sec", connection=redis_server.url, serializer="pickle")
    job = opted.enqueue("tests.worker.jobs:add", {1, 2}, 3)
    assert redis_server.client().hget(job.key, "serializer") == b"pickle"


class _Boom:
    """Unpickling this runs `touch PATH`: what a hostile payload does."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_worker_that_did_not_opt_in_never_unpickles(redis_server, start_worker, tmp_path):
    marker = tmp_path / "pwned"
    queue = Queue("sec", connection=redis_server.url)
    job = queue.enqueue("tests.worker.jobs:add", 1, 2)  # queued; no worker yet
    payload = base64.b64encode(pickle.dumps([_Boom(marker), 1])).decode()
    redis_server.client().hset(job.key, mapping={"serializer": "pickle", "args": payload})
    start_worker("threading", 1, redis_server.url, "-q", "sec")
    with pytest.raises(JobFailed, match="allow-pickle"):
        job.get(timeout=20)
    assert not marker.exists(), "the worker unpickled a payload it never opted in to"


# ---- the allow-list ----
def test_os_system_is_not_allowed_and_has_no_side_effect(redis_server, start_worker, tmp_path):
    marker = tmp_path / "x"
    imported = tmp_path / "imported"
    module_dir = tmp_path / "mods"
    module_dir.mkdir()
    # A module outside the allowed prefix whose mere import leaves a trace.
    (module_dir / "hostile_mod.py").write_text(
        f"open({str(imported)!r}, 'w').close()\n\ndef run():\n    return 'ran'\n"
    )
    queue = Queue("sec", connection=redis_server.url)
    # Refused jobs go back behind the ones that can run.
    good = queue.enqueue("tests.worker.jobs:add", 2, 2)
    system = queue.enqueue("os:system", f"touch {marker}")
    hostile = queue.enqueue("hostile_mod:run")
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = (
        f"{module_dir}{os.pathsep}{env_path}" if env_path else str(module_dir)
    )
    try:
        workers = [
            start_worker(backend, 2, redis_server.url, "-q", "sec")
            for backend in ("forking", "threading")
        ]
    finally:
        if env_path:
            os.environ["PYTHONPATH"] = env_path
        else:
            os.environ.pop("PYTHONPATH")
    assert good.get(timeout=20) == 4
    # Refused, not run (issue 32: back in the queue untouched, for a worker that allows
    # them); two stray jobs do not stop a worker that runs others (ten different ones would).
    wait_for(
        lambda: all(
            any(f"job {func} refused" in w.output() for w in workers)
            for func in ("os:system", "hostile_mod:run")
        ),
        timeout=30,
        message="both jobs refused",
    )
    # Both registered, so both handle SIGTERM: one of them may still have been starting
    # while the other ran every job (a SIGTERM then ends it by default: exit -15).
    wait_for(
        lambda: len(list_workers(connect(redis_server.url))) == 2,
        timeout=30,
        message="both workers registered",
    )
    for worker in workers:  # a warm stop: a refusal under way hands its job back first
        worker.signal(signal.SIGTERM)
    for worker in workers:
        assert worker.wait_exit(30) == 0, worker.output()[-3000:]
    for job in (system, hostile):
        assert job.status == JobStatus.QUEUED and job.attempts == 0
    assert not marker.exists(), "os.system ran"
    assert not imported.exists(), "a module outside the allow-list was imported"
