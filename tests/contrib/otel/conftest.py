"""The otel tests' OpenTelemetry SDK: installed apart from the virtualenv (sdk_target.py),
put on this process' sys.path and on the PYTHONPATH of the workers a test starts."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from tests.contrib.otel.sdk_target import SdkUnavailable, sdk_directory


@pytest.fixture(scope="session")
def _sdk_path() -> str:
    try:
        directory = str(sdk_directory())
    except SdkUnavailable as exc:
        pytest.fail(f"no OpenTelemetry SDK for the otel tests: {exc}")
    if directory not in sys.path:
        sys.path.append(directory)  # after site-packages: the virtualenv's API comes first
        importlib.invalidate_caches()
    return directory


@pytest.fixture(autouse=True)
def otel_sdk(_sdk_path, monkeypatch) -> str:
    """The SDK importable here and in every process the test starts."""
    paths = [_sdk_path, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
    return _sdk_path
