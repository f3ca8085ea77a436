"""The virtualenv of the Django 6.1 tests: Python 3.12+ (found through pyenv or on PATH),
Django>=6.1 (django.tasks built in) and rqconc's own requirements, with rqconc itself read
from this checkout (a .pth file, as `make venv` does). Made once and kept in .venv-django6
(git-ignored): a later run reuses it while its stamp (the Python, the requirements) holds."""

from __future__ import annotations

import configparser
import fcntl
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

from tests.support.worker_process import ROOT

VENV = ROOT / ".venv-django6"
DJANGO = "Django>=6.1"


class VenvUnavailable(Exception):
    """Why the virtualenv could not be made (the test fails with it)."""


def requirements() -> List[str]:
    """rqconc's install_requires as setup.cfg lists them, and Django 6.1."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    lines = config["options"]["install_requires"].splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def find_python() -> Optional[str]:
    """A Python 3.12 or newer: pyenv's versions, then python3.13/python3.12 on PATH."""
    candidates: List[str] = []
    pyenv = shutil.which("pyenv")
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    if pyenv:
        found = subprocess.run([pyenv, "root"], capture_output=True, text=True)
        roots.insert(0, found.stdout.strip())
    for root in filter(None, roots):
        candidates += sorted(glob.glob(f"{root}/versions/3.1[2-9]*/bin/python3"), reverse=True)
    candidates += filter(None, (shutil.which("python3.13"), shutil.which("python3.12")))
    if sys.version_info >= (3, 12):
        candidates.append(sys.executable)
    for python in candidates:
        check = [python, "-c", "import sys, sqlite3, ssl; assert sys.version_info >= (3, 12)"]
        if subprocess.run(check, capture_output=True).returncode == 0:
            return python
    return None


def _run(argv: List[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise VenvUnavailable(f"{what} failed ({done.returncode}): {done.stderr[-1500:]}")


def django6_python() -> str:
    """The virtualenv's python, made first if missing or stale."""
    VENV.parent.mkdir(exist_ok=True)
    with open(str(VENV) + ".lock", "w") as lock:  # two test runs in one checkout: one builds
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure()


def _ensure() -> str:
    python = find_python()
    if python is None:
        raise VenvUnavailable("no Python 3.12+ found (pyenv versions, python3.12/3.13 on PATH)")
    stamp = "\n".join([os.path.realpath(python), *requirements(), DJANGO])
    venv_python = VENV / "bin" / "python"
    stamp_file = VENV / ".stamp"
    if venv_python.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        return str(venv_python)
    shutil.rmtree(VENV, ignore_errors=True)
    _run([python, "-m", "venv", str(VENV)], f"{python} -m venv")
    pip = [str(venv_python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, *requirements(), DJANGO], "pip install of rqconc's requirements and Django 6.1")
    site = subprocess.run(
        [str(venv_python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "rqconc-checkout.pth").write_text(f"{ROOT}\n")
    stamp_file.write_text(stamp)
    return str(venv_python)
