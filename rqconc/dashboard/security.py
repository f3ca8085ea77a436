"""The dashboard's locks: only the Host names it is reached by (hosts.py: DNS rebinding), HTTP
Basic on every path when credentials are set, a CSRF token on every state-changing request,
and headers that keep the browser from running anything the
page did not ship (a Content-Security-Policy without inline scripts: even a job argument that
somehow became markup could not run).

Why a token and not only Basic auth: a browser resends Basic credentials to the dashboard on
any request another site makes it send (a form posted from an attacker's page). That page
cannot read the token (same-origin policy) and cannot set a custom header cross-site without
a CORS preflight the dashboard never grants, so a POST without `X-CSRF-Token` is refused.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from typing import Optional, Tuple

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rqconc.dashboard.hosts import HostPolicy

CSRF_HEADER = "x-csrf-token"
SAFETY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def new_csrf_token() -> str:
    """One token per dashboard process: every page it serves carries it."""
    return secrets.token_urlsafe(32)


def check_csrf(request: Request, token: str) -> None:
    """403 unless the request carries this process's token in its X-CSRF-Token header."""
    sent = request.headers.get(CSRF_HEADER, "")
    if not hmac.compare_digest(sent.encode(), token.encode()):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page and try again")


def _credentials(headers: Headers) -> Optional[Tuple[str, str]]:
    scheme, _, encoded = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


def _matches(given: Optional[Tuple[str, str]], wanted: Tuple[str, str]) -> bool:
    if given is None:
        return False
    # Both compared, in constant time: no early exit tells which of the two was wrong.
    user_ok = hmac.compare_digest(given[0].encode(), wanted[0].encode())
    password_ok = hmac.compare_digest(given[1].encode(), wanted[1].encode())
    return user_ok and password_ok


class Guard:
    """ASGI middleware in front of every route (static files and /metrics included)."""

    def __init__(
        self, app: ASGIApp, auth: Optional[Tuple[str, str]], hosts: HostPolicy = HostPolicy()
    ) -> None:
        self.app = app
        self.auth = auth
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + SAFETY_HEADERS
            await send(message)

        headers = Headers(scope=scope)
        host = headers.get("host")
        if not self.hosts.accepts(host, scope.get("server")):
            await _wrong_host(host)(scope, receive, with_headers)
            return
        if self.auth is not None and not _matches(_credentials(headers), self.auth):
            refusal = PlainTextResponse(
                "credentials needed",
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="rqconc dashboard", charset="UTF-8"'},
            )
            await refusal(scope, receive, with_headers)
            return
        await self.app(scope, receive, with_headers)


def _wrong_host(host: Optional[str]) -> PlainTextResponse:
    shown = repr(host[:100]) if host else "(none)"
    return PlainTextResponse(
        f"refused: Host {shown} is not an address of this dashboard "
        "(start it with --allowed-host NAME to serve it under another name)\n",
        status_code=400,
    )
