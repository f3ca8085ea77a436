"""Process titles: `ps` of a running worker shows the supervisor's role, backend, queues
and busy/idle counts, and each process child as `idle` or `busy <item id>`."""

import subprocess

import psutil
import pytest

from tests.support.worker_process import BACKENDS, PROCESS_BACKENDS, wait_for


def ps_args(pid):
    """What `ps -o args=` prints for the process (the title an operator sees)."""
    result = subprocess.run(["ps", "-o", "args=", "-p", str(pid)], capture_output=True, text=True)
    return result.stdout.strip()


def cmdline(pid):
    try:
        return " ".join(psutil.Process(pid).cmdline()).strip()
    except psutil.Error:
        return ""


@pytest.mark.parametrize("backend", BACKENDS)
def test_ps_shows_supervisor_and_children_titles(backend, spool, start_worker):
    worker = start_worker(backend, 2, spool, "-q", "default,high", "--name", "titled")
    spool.wait_idle(2)
    idle_title = f"rqconc: supervisor {backend} 2 [default,high] busy=0 idle=2 name=titled"
    wait_for(
        lambda: ps_args(worker.pid) == idle_title,
        message=f"idle supervisor title, have {ps_args(worker.pid)!r}",
    )

    item = spool.add(sleep=30)
    wait_for(lambda: spool.events("started"), message="item started")
    busy_title = f"rqconc: supervisor {backend} 2 [default,high] busy=1 idle=1 name=titled"
    wait_for(
        lambda: ps_args(worker.pid) == busy_title,
        message=f"busy supervisor title, have {ps_args(worker.pid)!r}",
    )
    assert cmdline(worker.pid) == busy_title

    children = worker.child_pids()
    if backend in PROCESS_BACKENDS:
        assert len(children) == 2
        wait_for(
            lambda: (
                sorted(ps_args(pid) for pid in children)
                == sorted([f"rqconc: child 0 busy {item}", "rqconc: child 1 idle"])
                or sorted(ps_args(pid) for pid in children)
                == sorted([f"rqconc: child 1 busy {item}", "rqconc: child 0 idle"])
            ),
            message=f"child titles, have {[ps_args(pid) for pid in children]}",
        )
    else:
        # Threads and greenlets are not processes: the supervisor title carries them.
        assert children == []
