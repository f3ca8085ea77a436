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
