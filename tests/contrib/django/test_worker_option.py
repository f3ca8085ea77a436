"""`rqconc worker --django SETTINGS` (SPEC 16): a settings module that is not there is one
line and exit 2 before any child starts; DJANGO_SETTINGS_MODULE gives the option too."""

import os
import subprocess
import sys

from tests.contrib.django.conftest import SITE
from tests.support.worker_process import ROOT


def run(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "forking", "1", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )


def test_a_missing_settings_module_is_one_line_and_exit_2():
    done = run("--django", "nosuch.settings", "--path", str(SITE))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "main.py: error: --django: no settings module 'nosuch.settings' here (see --path)"
    )


def test_django_settings_module_in_the_environment_is_the_option():
    done = run("--print-config", DJANGO_SETTINGS_MODULE="djsite.settings")
    assert done.returncode == 0, done.stderr
    assert 'django = "djsite.settings"' in done.stdout
