import pytest

from tests.support.worker_process import Spool


@pytest.fixture
def spool(tmp_path):
    return Spool(tmp_path)
