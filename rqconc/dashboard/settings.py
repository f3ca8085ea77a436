"""What `rqconc dashboard` decides before any web code loads: where it listens, whether that
is safe without credentials, and which Redis and namespace it shows.

The settings reach the app through one environment variable because uvicorn builds the app
itself, from an import string (so `rqconc --help` never imports the optional web packages).
"""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import asdict, dataclass
from typing import Optional, Tuple

SETTINGS_VARIABLE = "RQCONC_DASHBOARD_SETTINGS"
AUTH_VARIABLE = "RQCONC_DASHBOARD_AUTH"
ALLOWED_HOSTS_VARIABLE = "RQCONC_DASHBOARD_ALLOWED_HOSTS"
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


@dataclass(frozen=True)
class DashboardSettings:
    url: Optional[str] = None
    namespace: str = "rqconc"
    auth: Optional[Tuple[str, str]] = None  # (user, password) for HTTP Basic
    host: str = "127.0.0.1"  # the address it listens on (--host)
    allowed_hosts: Tuple[str, ...] = ()  # more Host names it answers (--allowed-host; hosts.py)

    def to_environment(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_environment(cls) -> DashboardSettings:
        raw = json.loads(os.environ.get(SETTINGS_VARIABLE) or "{}")
        auth = raw.get("auth")
        return cls(
            raw.get("url"),
            raw.get("namespace") or "rqconc",
            tuple(auth) if auth else None,
            raw.get("host") or "127.0.0.1",
            tuple(raw.get("allowed_hosts") or ()),
        )


def parse_auth(value: Optional[str]) -> Optional[Tuple[str, str]]:
    """`USER:PASSWORD` as a pair; ValueError (never echoing the password) when malformed."""
    if value is None or value == "":
        return None
    user, sep, password = value.partition(":")
    if not sep or not user or not password:
        raise ValueError("--auth must be USER:PASSWORD, both non-empty")
    return user, password


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, auth: Optional[Tuple[str, str]]) -> None:
    """A dashboard reachable from other machines can requeue, purge and cancel: it needs
    credentials. ValueError when `host` is not loopback and there are none."""
    if not is_loopback(host) and auth is None:
        raise ValueError(
            f"--host {host} is reachable from other machines: give --auth USER:PASSWORD "
            f"(or {AUTH_VARIABLE}), or listen on 127.0.0.1"
        )
