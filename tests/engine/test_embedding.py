"""SPEC section 2: the Supervisor embedded in a plain Python program, and bad arguments."""

import subprocess
import sys
import textwrap

import pytest

from rqconc.engine import BaseSupervisor, SupervisorState
from rqconc.engine.fake_source import FakeSource
from tests.support.worker_process import BACKENDS, ROOT, wait_for

IN_PROCESS = ["forking", "multiprocessing", "threading"]


def states(sup):
    return [child.state for child in sup.children]


@pytest.mark.parametrize("backend", IN_PROCESS)
def test_embedded_supervisor_starts_reports_children_and_stops(backend, spool):
    sup = BaseSupervisor(
        backend=backend,
        size=8 if backend == "threading" else 3,
        source=FakeSource(spool=str(spool.dir), log=str(spool.log)),
    )
    assert sup.state is SupervisorState.READY
    sup.start()
    wait_for(lambda: states(sup) == ["idle"] * sup.size, message="all children idle")
    assert sup.state is SupervisorState.RUNNING
    item = spool.add(sleep=1.0)
    busy = wait_for(lambda: [c for c in sup.children if c.state == "busy"], message="busy")
    assert busy[0].job_id == item
    if backend != "threading":
        assert all(child.pid for child in sup.children)
    sup.stop()
    assert sup.join(10) == 0
    assert sup.state is SupervisorState.STOPPED
    assert spool.items("done") == [item]


def test_embedded_cold_stop_gives_the_running_item_back(spool):
    sup = BaseSupervisor(
        backend="threading", size=2, source=FakeSource(spool=str(spool.dir), log=str(spool.log))
    ).start()
    item = spool.add(sleep=5)
    wait_for(lambda: "busy" in states(sup), message="busy")
    sup.stop(graceful=False)
    assert sup.join(5) == 1
    assert spool.items("interrupted") == [item]


def test_embedded_gevent_supervisor_in_a_patched_program(tmp_path):
    program = textwrap.dedent("""
        from gevent import monkey; monkey.patch_all()
        import time
        from rqconc.engine import BaseSupervisor
        sup = BaseSupervisor(backend="gevent", size=10).start()
        deadline = time.monotonic() + 10
        while len(sup.children) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        print(len(sup.children))
        sup.stop(graceful=False)
        print(sup.join(10))
    """)
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert result.stdout.split() == ["10", "1"], result.stderr


def test_gevent_in_an_unpatched_process_raises_a_clear_error():
    program = "from rqconc.engine import BaseSupervisor; BaseSupervisor(backend='gevent', size=2)"
    result = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert result.returncode != 0
    assert "monkey" in result.stderr.splitlines()[-1]


@pytest.mark.parametrize("backend", ["fibers", 42, None, object])
def test_an_unknown_backend_is_a_value_error_naming_the_valid_ones(backend):
    with pytest.raises(ValueError) as info:
        BaseSupervisor(backend=backend)
    assert all(name in str(info.value) for name in BACKENDS)


@pytest.mark.parametrize("size", [0, -1, 1.5, "4", True])
def test_a_size_below_1_or_not_an_integer_is_a_value_error(size):
    with pytest.raises(ValueError):
        BaseSupervisor(backend="threading", size=size)


@pytest.mark.parametrize(
    "args",
    [
        ["main.py", "fibers", "4"],
        ["main.py", "forking", "0"],
        ["main.py", "forking", "four"],
        ["main.py"],
        ["-m", "rqconc.cli.app", "worker", "-b", "fibers"],
    ],
)
def test_cli_misuse_is_one_line_and_exit_code_2(args):
    if args[0] == "-m":
        args = ["-c", "from rqconc.gevent_first import console_main; console_main()", *args[3:]]
    result = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
