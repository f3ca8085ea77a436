"""RqconcBackend on Django 6.1, whose django.tasks is built in (SPEC 16): the core scenario
in a Python 3.12+ virtualenv made (once, then cached) by django6_venv.py. A machine where it
cannot be made fails this test with the reason: it is never skipped."""

import json
import os
import signal
import subprocess

import pytest

from tests.contrib.django.django6_venv import VenvUnavailable, django6_python
from tests.support.redis_server import RedisServer
from tests.support.worker_process import ROOT

SCENARIO = ROOT / "tests" / "contrib" / "django" / "django6_scenario.py"


# The first run makes the virtualenv (about a minute); later runs take seconds.
@pytest.mark.timeout(600)
def test_the_core_scenario_on_django_6_1(redis_binary, tmp_path):
    try:
        python = django6_python()
    except VenvUnavailable as exc:
        pytest.fail(f"no Django 6.1 virtualenv: {exc}")
    server = RedisServer(redis_binary).start()
    scenario = subprocess.Popen(
        [python, str(SCENARIO), server.url, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its worker too: the whole group is ended after
    )
    try:
        out, err = scenario.communicate(timeout=90)
    finally:
        try:
            os.killpg(scenario.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        server.close()
    worker_log = (tmp_path / "worker.log").read_text() if (tmp_path / "worker.log").exists() else ""
    assert scenario.returncode == 0, f"{err[-3000:]}\nworker:\n{worker_log[-3000:]}"
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["django"] >= [6, 1] and summary["framework"] == "django.tasks.backends.base"
    assert summary["status"] == "SUCCESSFUL" and summary["row"] == "on django 6"
    assert summary["value"]["text"] == "on django 6"
    assert (summary["failed"], summary["error"]) == ("FAILED", "builtins.ValueError")
    context = summary["context"]
    assert (context["attempt"], context["status"], context["label"]) == (1, "RUNNING", "ctx")
