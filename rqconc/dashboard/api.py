"""The JSON endpoints the page polls (GET, never changing anything) and the actions it posts
(POST with the CSRF token: requeue, purge, cancel, suspend, resume).

Endpoints are plain functions: Starlette runs them in its thread pool, where the blocking
redis-py client belongs.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import redis
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from rqconc import errors
from rqconc.dashboard import reads
from rqconc.dashboard.job_view import job_page
from rqconc.dashboard.rates import queue_rates, timeline
from rqconc.dashboard.security import check_csrf
from rqconc.metrics.read import queue_functions
from rqconc.queue import control
from rqconc.queue.job import Job
from rqconc.queue.queue import Queue
from rqconc.store.keys import check_queue_name


def where(request: Request) -> Tuple[redis.Redis, str]:
    state = request.app.state
    return state.client, state.namespace


def queue_name(value: Any) -> str:
    try:
        return check_queue_name(value)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


def _offset(request: Request) -> int:
    raw = request.query_params.get("offset", "0")
    if not raw.isdigit():
        raise HTTPException(400, "offset must be a whole number")
    return int(raw)


def overview(request: Request) -> JSONResponse:
    client, namespace = where(request)
    report = reads.overview(client, namespace)
    names = [q["name"] for q in report["queues"]]
    rates = queue_rates(client, namespace, names)
    for row in report["queues"]:
        row.update(rates.get(row["name"], {}))
    report["timeline"] = timeline(client, namespace)
    return JSONResponse(report)


def workers(request: Request) -> JSONResponse:
    return JSONResponse(reads.workers(*where(request)))


def functions(request: Request) -> JSONResponse:
    """A queue's functions (SPEC 17): finished, failed and run-time p50/p95 (seconds) of each
    since the namespace began; at most 100 named, the rest as 'other'."""
    client, namespace = where(request)
    name = queue_name(request.path_params["queue"])
    rows = [
        {
            "func": f.name,
            "finished": f.finished,
            "failed": f.failed,
            "run_p50": f.run.quantile(0.5),
            "run_p95": f.run.quantile(0.95),
        }
        for f in queue_functions(client, name, namespace)
    ]
    return JSONResponse({"queue": name, "functions": rows})


def job(request: Request) -> JSONResponse:
    client, namespace = where(request)
    page = job_page(client, namespace, request.path_params["job_id"])
    if page is None:
        raise HTTPException(404, "no such job (it may have expired)")
    return JSONResponse(page)


def failed(request: Request) -> JSONResponse:
    """The dead letters of `?queue=Q`, or of every queue without it (or with it empty)."""
    client, namespace = where(request)
    given = request.query_params.get("queue")
    queue = queue_name(given) if given else None
    return JSONResponse(reads.failed_page(client, namespace, queue, _offset(request)))


def queue_jobs(request: Request) -> JSONResponse:
    """`/api/queues/{queue}/jobs?status=S&func=F&offset=N`: one page of a queue's jobs."""
    client, namespace = where(request)
    queue = queue_name(request.path_params["queue"])
    params = request.query_params
    try:
        page = reads.jobs_page(
            client,
            namespace,
            queue,
            params.get("status", "queued"),
            _offset(request),
            params.get("func") or None,
        )
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    return JSONResponse(page)


def scheduled(request: Request) -> JSONResponse:
    client, namespace = where(request)
    queue = queue_name(request.query_params.get("queue", "default"))
    page = reads.scheduled_page(client, namespace, queue)
    page["crons"] = reads.crons(client, namespace)
    return JSONResponse(page)


def events(request: Request) -> JSONResponse:
    client, namespace = where(request)
    after = request.query_params.get("after") or None
    if after is not None and not _is_stream_id(after):
        raise HTTPException(400, "after must be a stream id such as 1700000000000-0")
    return JSONResponse(reads.events(client, namespace, after))


def _is_stream_id(value: str) -> bool:
    millis, _, seq = value.partition("-")
    return millis.isdigit() and (seq == "" or seq.isdigit())


# ---- actions: POST + CSRF token ----


async def body_of(request: Request) -> Dict[str, Any]:
    check_csrf(request, request.app.state.csrf_token)
    try:
        body = await request.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise HTTPException(400, "the body must be a JSON object")
    return body


def _dead_letters(request: Request, body: Dict[str, Any]) -> Any:
    client, namespace = where(request)
    queue = queue_name(body.get("queue"))
    return Queue(queue, connection=client, namespace=namespace).failed


async def requeue(request: Request) -> JSONResponse:
    body = await body_of(request)
    letters = _dead_letters(request, body)
    if body.get("all"):
        return JSONResponse({"requeued": await in_thread(letters.requeue_all)})
    job_id = body.get("job_id")
    try:
        requeued = isinstance(job_id, str) and await in_thread(letters.requeue, job_id)
    except ValueError as exc:  # another job holds its unique key
        raise HTTPException(409, str(exc)) from None
    if not requeued:
        raise HTTPException(404, f"not a dead letter of queue {letters.name}")
    return JSONResponse({"requeued": 1})


async def purge(request: Request) -> JSONResponse:
    letters = _dead_letters(request, await body_of(request))
    return JSONResponse({"purged": await in_thread(letters.purge)})


async def cancel(request: Request) -> JSONResponse:
    await body_of(request)
    client, namespace = where(request)
    job_id = request.path_params["job_id"]
    try:
        canceled = await in_thread(Job(job_id, client, namespace).cancel)
    except errors.NoSuchJob:
        raise HTTPException(404, "no such job (it may have expired)") from None
    return JSONResponse({"canceled": canceled})


async def suspend(request: Request) -> JSONResponse:
    await body_of(request)
    client, namespace = where(request)
    await in_thread(control.suspend, client, None, namespace)
    return JSONResponse({"suspended": True})


async def resume(request: Request) -> JSONResponse:
    await body_of(request)
    client, namespace = where(request)
    await in_thread(control.resume, client, namespace)
    return JSONResponse({"suspended": False})


async def in_thread(func: Callable[..., Any], *args: Any) -> Any:
    return await run_in_threadpool(func, *args)


def redis_unreachable(request: Request, exc: Exception) -> JSONResponse:
    """Redis down or answering errors: one line for the page's banner, no traceback."""
    message = str(exc) if isinstance(exc, errors.RQConcError) else f"Redis: {type(exc).__name__}"
    return JSONResponse({"error": message}, status_code=503)


ERROR_TYPES = (errors.RQConcError, redis.exceptions.RedisError)
