"""Which `Host` headers the dashboard answers: the lock against DNS rebinding.

A page the operator visits on attacker.example can re-point that name to 127.0.0.1 once it
has loaded; the browser then treats the dashboard as attacker.example's own origin and lets
the page read every answer (jobs, the CSRF token) and post actions. The browser still sends
`Host: attacker.example:PORT`, so answering only the names this dashboard is reached by
closes that door, as Django's ALLOWED_HOSTS and Jupyter's local-host check do:

- the address it listens on (`--host`), with its port;
- with a wildcard `--host` (0.0.0.0, ::), the address the request arrived on, with its port
  (an address literal cannot be rebound: a rebinding page's Host is always its own name);
- `localhost`, `127.0.0.1` and `[::1]` with its port when it listens on loopback (or the
  request arrived on loopback);
- every name given with `--allowed-host NAME` (any port; `NAME:PORT` for one port), `*` for
  any Host at all (a reverse proxy that checks Host itself).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Optional, Tuple

from rqconc.dashboard.settings import is_loopback

ANY_HOST = "*"
WILDCARD_BINDS = ("", "0.0.0.0", "::")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
HTTP_PORT = 80  # a Host without a port names the scheme's default (TLS ends at a proxy)


def split_host(value: str) -> Optional[Tuple[str, Optional[int]]]:
    """`name[:port]` or `[v6]:port` as (lower-case name without brackets, port or None);
    None when it is no host at all."""
    value = value.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    else:
        name, port_text = value, None
    name = name[:-1] if name.endswith(".") else name  # "localhost." is localhost
    if not name or any(c.isspace() or c in "/@\\" for c in name):
        return None
    if port_text is None:
        return name, None
    return (name, int(port_text)) if port_text.isdigit() and len(port_text) <= 5 else None


def _same(a: str, b: str) -> bool:
    """Names equal, or addresses equal however written (`::1` and `0:0::1`)."""
    if a == b:
        return True
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return False


def check_allowed_host(value: str) -> str:
    """A `--allowed-host` value as stored (lower-case); ValueError naming it when it is no
    host name."""
    if value.strip() == ANY_HOST:
        return ANY_HOST
    if split_host(value) is None:
        raise ValueError(f"--allowed-host {value!r} is not a host name (NAME or NAME:PORT)")
    return value.strip().lower()


@dataclass(frozen=True)
class HostPolicy:
    """The Host headers one dashboard answers (module docstring)."""

    bound: str = "127.0.0.1"  # --host
    allowed: Tuple[str, ...] = ()  # --allowed-host values, as check_allowed_host stored them

    def accepts(self, header: Optional[str], arrived_on: Optional[Tuple[str, int]]) -> bool:
        """Whether a request with Host `header`, received on local address `arrived_on`
        (ASGI's scope["server"]: address, port), is answered."""
        if ANY_HOST in self.allowed:
            return True
        given = split_host(header) if header else None
        if given is None:
            return False
        if any(self._allows(entry, given) for entry in self.allowed):
            return True
        if arrived_on is None:
            return False
        local, port = arrived_on[0].lower(), arrived_on[1]
        if (given[1] or HTTP_PORT) != port:
            return False
        names = [] if self.bound in WILDCARD_BINDS else [self.bound.lower()]
        if self.bound in WILDCARD_BINDS:
            names.append(local)
        if is_loopback(self.bound) or is_loopback(local):
            names.extend(LOOPBACK_HOSTS)
        return any(_same(given[0], name.strip("[]")) for name in names)

    @staticmethod
    def _allows(entry: str, given: Tuple[str, Optional[int]]) -> bool:
        wanted = split_host(entry)
        if wanted is None or not _same(given[0], wanted[0]):
            return False
        return wanted[1] is None or wanted[1] == (given[1] or HTTP_PORT)
