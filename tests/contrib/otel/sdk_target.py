"""The OpenTelemetry SDK of the otel tests, in a directory of its own (.otel-sdk, git-ignored)
rather than in the project's virtualenv: redis-py 8.1 imports opentelemetry.sdk.metrics
whenever the SDK is importable (redis/observability), ~36 ms of CPU in every process that
imports redis, and the test suite starts over a thousand of them (issue #30). Only these
tests put the directory on sys.path and on their workers' PYTHONPATH.

Installed once with pip (`--target`, the version of the virtualenv's opentelemetry-api) and
reused while its stamp holds; a lock keeps two test processes from installing it at once."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import List

from packaging.requirements import Requirement

from tests.support.worker_process import ROOT

TARGET = ROOT / ".otel-sdk"


class SdkUnavailable(Exception):
    """Why the SDK could not be installed (the tests fail with it, never skip)."""


def sdk_directory() -> Path:
    """The directory holding opentelemetry.sdk, installed first if missing or stale."""
    with open(str(TARGET) + ".lock", "w") as lock:  # two xdist processes: one installs
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure()


def _ensure() -> Path:
    wanted = f"opentelemetry-sdk=={metadata.version('opentelemetry-api')}"
    stamp = TARGET / ".stamp"
    if stamp.exists() and stamp.read_text() == wanted:
        return TARGET
    shutil.rmtree(TARGET, ignore_errors=True)
    # One pip install of the SDK and of those of its requirements that the virtualenv lacks
    # (the semantic conventions it pins), --no-deps: the API and typing_extensions stay the
    # virtualenv's, not second copies that PYTHONPATH would put first. One call, since pip's
    # --target replaces (or skips) a top-level directory that exists, opentelemetry/ here.
    _pip(["--target", str(TARGET), wanted, *_unsatisfied(_requires(wanted))])
    check = [sys.executable, "-c", "import opentelemetry.sdk.trace"]
    done = subprocess.run(check, capture_output=True, text=True, env={"PYTHONPATH": str(TARGET)})
    if done.returncode != 0:
        raise SdkUnavailable(f"{wanted} in {TARGET} does not import: {done.stderr[-1500:]}")
    stamp.write_text(wanted)  # last: an install cut short is redone by the next run
    return TARGET


def _requires(wanted: str) -> List[str]:
    """The requirements of the distribution pip would install for `wanted`."""
    report = _pip(["--dry-run", "--ignore-installed", "--report", "-", wanted])
    (install,) = json.loads(report)["install"]
    return install["metadata"].get("requires_dist") or []


def _unsatisfied(requires: List[str]) -> List[str]:
    """The requirements that the virtualenv does not meet."""
    missing = []
    for line in requires:
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            version = None
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            missing.append(str(requirement))
    return missing


def _pip(arguments: List[str]) -> str:
    argv = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = subprocess.run([*argv, "--no-deps", *arguments], capture_output=True, text=True)
    if done.returncode != 0:
        raise SdkUnavailable(f"pip install {arguments} failed: {done.stderr[-1500:]}")
    return done.stdout
