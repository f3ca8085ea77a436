"""The package is typed for its users (SPEC section 12): `mypy --strict` passes on a user's
module that calls the public API (tests/typing/user_module.py), and fails on one that
calls it wrongly, so the types are real and not Any.

mypy runs in a subprocess, from a directory outside the checkout, and finds rqconc as an
installed package (PEP 561: through py.typed), as it would in a user's project: a bare
virtualenv whose .pth lists a directory holding rqconc and this venv's site-packages (the
editable install's import hook is invisible to mypy)."""

import ast
import configparser
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import rqconc

PACKAGE = Path(rqconc.__file__).parent
HERE = Path(__file__).parent
SITE_PACKAGES = next(p for p in sys.path if p.endswith("site-packages"))

WRONG = """
from rqconc import Job, Queue, task


@task("sms")
def send_sms(number: str, text: str) -> str:
    return text


job: Job = send_sms.delay(4912345, "hi")  # an int where a str is expected
length: int = send_sms("+49", "hi").upper()  # a str where an int is expected
position: int = Queue("sms").enqueue(send_sms, "+49", "x").position  # may be None
result: bytes = send_sms.delay("+49", "hi").get()  # get() returns the function's str
"""


@pytest.fixture(scope="module")
def user_python(tmp_path_factory):
    """A Python whose installed packages are rqconc (as its files) and this venv's."""
    root = tmp_path_factory.mktemp("typing")
    env = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    found = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    )
    installed = root / "installed"
    installed.mkdir()
    (installed / "rqconc").symlink_to(PACKAGE)
    (Path(found.stdout.strip()) / "user.pth").write_text(f"{installed}\n{SITE_PACKAGES}\n")
    return env / "bin" / "python"


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    """One fresh cache for the module's mypy runs: the second reads rqconc and its
    dependencies from what the first wrote (about half its time) instead of parsing them
    again, and nothing outside the run's temporary directory is read or written."""
    return tmp_path_factory.mktemp("mypy-cache")


def strict_mypy(python, module: Path, cache: Path):
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache)]
        + ["--python-executable", str(python), module.name],
        cwd=module.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_mypy_strict_passes_on_a_users_typed_module(user_python, mypy_cache, tmp_path):
    module = tmp_path / "user_module.py"
    module.write_text((HERE / "user_module.py").read_text())
    result = strict_mypy(user_python, module, mypy_cache)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_catches_wrong_calls_of_the_public_api(user_python, mypy_cache, tmp_path):
    module = tmp_path / "wrong_module.py"
    module.write_text(WRONG)
    result = strict_mypy(user_python, module, mypy_cache)
    assert result.returncode == 1
    assert 'Argument 1 to "delay" of "Task" has incompatible type "int"' in result.stdout
    assert 'expression has type "str", variable has type "int"' in result.stdout
    assert 'expression has type "int | None", variable has type "int"' in result.stdout
    assert 'expression has type "str", variable has type "bytes"' in result.stdout


APP = """
from rqconc import Queue, task


@task("sms")
def send(number: str) -> int:
    return len(number)


def main() -> int:
    print(Queue("sms"))
    return send.delay("+49").get(timeout=5)
"""


def test_mypy_strict_finds_rqconc_in_the_project_venv(tmp_path):
    # A user's app beside `make venv`'s editable install, checked by that venv's mypy: the
    # install must be one mypy can follow (Makefile: editable_mode=compat).
    (tmp_path / "app.py").write_text(APP)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "app.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_ships_py_typed():
    assert (PACKAGE / "py.typed").is_file()
    setup = configparser.ConfigParser()
    setup.read(PACKAGE.parent / "setup.cfg")
    assert "py.typed" in setup["options.package_data"]["rqconc"]


def test_type_checkers_see_every_lazy_export():
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    guarded = next(n for n in tree.body if isinstance(n, ast.If))
    seen = {
        alias.asname: f"{node.module}"
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == rqconc._EXPORTS
