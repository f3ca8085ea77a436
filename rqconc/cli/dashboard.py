"""`rqconc dashboard [--host H] [--port P] [--url URL] [--namespace NS] [--auth USER:PASSWORD]
[--allowed-host NAME ...]`: serve the web dashboard (SPEC section 9) until Ctrl+C.

It refuses to listen beyond loopback without credentials (exit 2), and answers only requests
whose Host is its own address or an allowed name (dashboard/hosts.py). The web packages are an
extra (`pip install '.[dashboard]'` in the checkout): uvicorn, imported only here when the
command runs, builds the app itself from its import string, so no other command ever loads them.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Optional, Sequence

import click

from rqconc.cli.common import client_for, namespace_option, url_option
from rqconc.connection.clients import check_settings, redact, resolve_url, translated_errors
from rqconc.dashboard.hosts import check_allowed_host
from rqconc.dashboard.settings import (
    ALLOWED_HOSTS_VARIABLE,
    AUTH_VARIABLE,
    SETTINGS_VARIABLE,
    DashboardSettings,
    check_exposure,
    parse_auth,
)
from rqconc.store.keys import KeySpace

APP_FACTORY = "rqconc.dashboard.app:app_from_environment"
WEB_PACKAGES = ("starlette", "uvicorn", "prometheus_client")


def _settings(
    host: str, url: Optional[str], namespace: str, auth: Optional[str], allowed: Sequence[str]
) -> DashboardSettings:
    try:
        KeySpace(namespace)
        credentials = parse_auth(auth)
        check_exposure(host, credentials)
        allowed_hosts = tuple(check_allowed_host(name) for name in allowed)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    missing = [name for name in WEB_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise click.ClickException(
            f"the dashboard needs {' and '.join(missing)}: install rqconc with its dashboard "
            "extra (pip install '.[dashboard]' in its checkout)"
        )
    return DashboardSettings(resolve_url(url), namespace, credentials, host, allowed_hosts)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=9181, show_default=True)
@namespace_option()
@click.option(
    "--auth",
    envvar=AUTH_VARIABLE,
    default=None,
    metavar="USER:PASSWORD",
    help=f"HTTP Basic credentials for every path (${AUTH_VARIABLE}); needed off loopback.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    envvar=ALLOWED_HOSTS_VARIABLE,
    metavar="NAME",
    help="Also answer requests for this Host name (NAME or NAME:PORT; '*': any), as when "
    f"reached through a proxy or DNS name; repeatable (${ALLOWED_HOSTS_VARIABLE}: "
    "space-separated). Other names are refused (400) against DNS rebinding.",
)
@url_option
def dashboard(
    host: str,
    port: int,
    namespace: str,
    auth: Optional[str],
    allowed_hosts: Sequence[str],
    url: Optional[str],
) -> None:
    """Serve the web dashboard: queues, workers, jobs, failed, scheduled, live events."""
    settings = _settings(host, url, namespace, auth, allowed_hosts)
    client = client_for(settings.url)
    with translated_errors(client):
        check_settings(client)
        client.ping()  # a wrong URL is told now, in one line, not on the first page load
    import uvicorn

    os.environ[SETTINGS_VARIABLE] = settings.to_environment()
    where = f"http://{host}:{port}/" if ":" not in host else f"http://[{host}]:{port}/"
    click.echo(f"rqconc dashboard on {where} (Redis {redact(settings.url or '')}, Ctrl+C stops)")
    uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, log_level="warning")
