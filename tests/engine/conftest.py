import pytest

from tests.support.worker_process import Spool, Worker


@pytest.fixture
def spool(tmp_path):
    return Spool(tmp_path)


@pytest.fixture
def start_worker(spool):
    """Start `python main.py BACKEND SIZE` on the fake source; every worker is killed after."""
    workers = []

    def start(backend, size, *extra, **kwargs):
        worker = Worker(backend, size, spool, *extra, **kwargs)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.close()
