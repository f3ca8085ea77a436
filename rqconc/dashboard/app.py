"""The dashboard as an ASGI app: one HTML shell per page (the page's script fills it from the
JSON API), the static files shipped in this package, /metrics, and the Guard in front of all.

`create_app(settings)` builds it; `app_from_environment()` is the factory `rqconc dashboard`
hands uvicorn (uvicorn imports the app by name, so the CLI never imports web packages).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import redis
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rqconc.connection.clients import connect
from rqconc.dashboard import actions, api
from rqconc.dashboard.hosts import HostPolicy
from rqconc.dashboard.security import Guard, new_csrf_token
from rqconc.dashboard.settings import DashboardSettings
from rqconc.metrics.exposition import CONTENT_TYPE
from rqconc.metrics.exposition import render as render_metrics

STATIC = Path(__file__).resolve().parent / "static"
PAGES = {
    "/": "Queues",
    "/workers": "Workers",
    "/jobs/{job_id}": "Job",
    "/queues/{queue}": "Queue",
    "/failed": "Failed jobs",
    "/scheduled": "Scheduled",
    "/events": "Live events",
}


def _shell(title: str) -> Callable[[Request], HTMLResponse]:
    template = (STATIC / "index.html").read_text(encoding="utf-8")

    def page(request: Request) -> HTMLResponse:
        state = request.app.state
        filled = template.replace("{{title}}", html.escape(title))
        filled = filled.replace("{{namespace}}", html.escape(state.namespace, quote=True))
        filled = filled.replace("{{csrf}}", html.escape(state.csrf_token, quote=True))
        return HTMLResponse(filled)

    return page


def metrics(request: Request) -> Response:
    state = request.app.state
    body = render_metrics(state.client, state.namespace)
    return Response(body, media_type=CONTENT_TYPE)


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"error": exc.detail}, status_code=exc.status_code)


def _routes() -> list:
    pages = [Route(path, _shell(title)) for path, title in PAGES.items()]
    reads = [
        Route("/api/overview", api.overview),
        Route("/api/workers", api.workers),
        Route("/api/jobs/{job_id}", api.job),
        Route("/api/failed", api.failed),
        Route("/api/queues/{queue}/jobs", api.queue_jobs),
        Route("/api/queues/{queue}/functions", api.functions),
        Route("/api/scheduled", api.scheduled),
        Route("/api/events", api.events),
        Route("/metrics", metrics),
    ]
    return pages + reads + _posts() + [Mount("/static", StaticFiles(directory=STATIC))]


def _posts() -> list:
    """The actions: POST only, each checks the CSRF token (api.body_of)."""
    posts = [
        Route("/api/failed/requeue", api.requeue, methods=["POST"]),
        Route("/api/failed/purge", api.purge, methods=["POST"]),
        Route("/api/jobs/{job_id}/cancel", api.cancel, methods=["POST"]),
        Route("/api/suspend", api.suspend, methods=["POST"]),
        Route("/api/resume", api.resume, methods=["POST"]),
    ]
    on_jobs = {
        "delete": actions.delete_jobs,
        "cancel": actions.cancel_jobs,
        "requeue": actions.requeue_jobs,
        "promote": actions.promote_jobs,
    }
    posts += [Route(f"/api/selected/{verb}", f, methods=["POST"]) for verb, f in on_jobs.items()]
    on_queue = {
        "empty": actions.empty_queue,
        "delete": actions.delete_queue,
        "pause": actions.pause_queue,
        "resume": actions.resume_queue,
        "limits": actions.set_limits,
    }
    posts += [
        Route(f"/api/queues/{{queue}}/{verb}", f, methods=["POST"]) for verb, f in on_queue.items()
    ]
    return posts


def create_app(settings: DashboardSettings, client: Optional[redis.Redis] = None) -> Starlette:
    """The dashboard for `settings` (a ready client may be passed in, as tests and the
    benchmark do)."""
    handlers: Dict[Any, Callable[[Request, Exception], Any]] = {HTTPException: _http_error}
    handlers.update({kind: api.redis_unreachable for kind in api.ERROR_TYPES})
    hosts = HostPolicy(settings.host, settings.allowed_hosts)
    app = Starlette(
        routes=_routes(),
        middleware=[Middleware(Guard, auth=settings.auth, hosts=hosts)],
        exception_handlers=handlers,
    )
    app.state.client = client or connect(settings.url)
    app.state.namespace = settings.namespace
    app.state.csrf_token = new_csrf_token()
    return app


def app_from_environment() -> Starlette:
    """uvicorn's factory: the settings `rqconc dashboard` put in the environment."""
    return create_app(DashboardSettings.from_environment())
