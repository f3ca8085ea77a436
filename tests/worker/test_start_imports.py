"""What a worker's start imports (issue #30: the suite starts hundreds of workers, and a
user's worker should start fast): a backend imports only its own pool, and a worker that
delivers no webhook imports no HTTP client. Read at the end of a real `--burst` start that
finds its queue empty and exits."""

import subprocess

import pytest

from tests.support.worker_process import main_py_argv

POOLS = {
    "forking": "rqconc.engine.backends.forking",
    "multiprocessing": "rqconc.engine.backends.multiproc",
    "threading": "rqconc.engine.backends.threads",
    "gevent": "rqconc.engine.backends.greenlets",
    "asyncio": "rqconc.engine.backends.asyncio_loop",
}
# urllib.request and http.client: only a webhook job needs them (queue/workflow/callbacks.py).
NEVER_AT_START = {"urllib.request", "http.client"}


# main.py as `python main.py ...` runs it, with the modules loaded by its end written down
# (importtime would miss those imported through importlib, as the pools are).
OBSERVED_MAIN = """
import atexit, runpy, sys
out, sys.argv = sys.argv[1], sys.argv[2:]
atexit.register(lambda: open(out, "w").write("\\n".join(sys.modules)))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def modules_imported(argv, tmp_path):
    out = tmp_path / "modules.txt"
    observed = [argv[0], "-c", OBSERVED_MAIN, str(out), *argv[1:]]
    done = subprocess.run(observed, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return set(out.read_text().split())


@pytest.mark.parametrize("backend", ["threading", "forking"])
def test_a_burst_start_imports_its_own_pool_and_no_http_client(backend, redis_url, tmp_path):
    argv = main_py_argv(backend, 1, "--burst", "--url", redis_url, "-q", "start-imports")
    imported = modules_imported(argv, tmp_path)
    assert POOLS[backend] in imported  # the reading works
    others = {module for name, module in POOLS.items() if name != backend}
    assert not imported & (others | NEVER_AT_START | {"gevent"})


# main.py as above, with the process that builds each Lua step written down.
OBSERVED_BUILDS = """
import os, runpy, sys
out, sys.argv = sys.argv[1], sys.argv[2:]
import rqconc.store.scripts as scripts
build = scripts.Script.__init__
def noted(self, name):
    build(self, name)
    with open(out, "a") as f:
        f.write(f"{os.getpid()} {name}\\n")
scripts.Script.__init__ = noted
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_forked_children_inherit_the_job_steps_built_by_their_supervisor(redis_url, tmp_path):
    """A child's first take and first completion do not wait for their Lua to be built: the
    supervisor builds the job steps (store.steps.JOB_STEPS) before it forks (SPEC 5's no-op,
    and a child recycled by --max-jobs-per-child starts at once)."""
    from rqconc.queue.queue import Queue
    from rqconc.store.steps import JOB_STEPS

    jobs = Queue("inherited", connection=redis_url).enqueue_many(
        [("tests.worker.jobs:add", (i, 1)) for i in range(3)]
    )
    out = tmp_path / "builds.txt"
    argv = main_py_argv("forking", 1, "--burst", "--url", redis_url, "-q", "inherited")
    argv += ["--allow", "tests", "--max-jobs-per-child", "2"]  # a second child too
    observed = [argv[0], "-c", OBSERVED_BUILDS, str(out), *argv[1:]]
    done = subprocess.Popen(observed, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, stderr = done.communicate(timeout=60)
    assert done.returncode == 0, stderr[-3000:]
    assert [job.refresh() or job.status.value for job in jobs] == ["finished"] * 3
    builds = [line.split() for line in out.read_text().splitlines()]
    by_supervisor = {name for pid, name in builds if int(pid) == done.pid}
    in_children = {name for pid, name in builds if int(pid) != done.pid}
    assert set(JOB_STEPS) <= by_supervisor, builds
    assert not in_children & set(JOB_STEPS), builds
