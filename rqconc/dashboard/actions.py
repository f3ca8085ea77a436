"""The actions of the queue page (SPEC 17), each a POST with the CSRF token (api.body_of)
done through the client API: delete, cancel, requeue and promote the selected jobs; empty,
delete, pause and resume a queue; set or clear its limits.

An action on selected jobs acts on each and answers how many it changed and, per job it
could not change, one line saying why (a running job cannot be deleted, a job that is no
dead letter cannot be requeued...): one bad id never stops the others.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from rqconc import errors
from rqconc.dashboard.api import body_of, in_thread, queue_name, where
from rqconc.queue.job import Job
from rqconc.queue.queue import Queue

MAX_SELECTED = 500  # ids one action takes at most (a page shows 50)
GONE = "no such job (it may have expired)"


def _ids(body: Dict[str, Any]) -> List[str]:
    ids = body.get("ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise HTTPException(400, "ids must be a non-empty list of job ids")
    if len(ids) > MAX_SELECTED:
        raise HTTPException(400, f"at most {MAX_SELECTED} jobs at once, not {len(ids)}")
    return list(dict.fromkeys(ids))


def _each(ids: List[str], act: Callable[[str], bool], verb: str, unchanged: str) -> Dict[str, Any]:
    """act(id) for every id: how many it changed, and why each other one was not
    (`unchanged`: why, when act returns False)."""
    done, refused = 0, {}
    for job_id in ids:
        try:
            if act(job_id):
                done += 1
            else:
                refused[job_id] = unchanged
        except errors.NoSuchJob:
            refused[job_id] = GONE
        except ValueError as exc:
            refused[job_id] = str(exc)
    return {verb: done, "refused": refused}


def _queue(request: Request, name: Any) -> Queue:
    client, namespace = where(request)
    return Queue(queue_name(name), connection=client, namespace=namespace)


async def delete_jobs(request: Request) -> JSONResponse:
    ids = _ids(await body_of(request))
    client, namespace = where(request)

    def delete(job_id: str) -> bool:
        return Job(job_id, client, namespace).delete()

    return JSONResponse(await in_thread(_each, ids, delete, "deleted", GONE))


async def cancel_jobs(request: Request) -> JSONResponse:
    ids = _ids(await body_of(request))
    client, namespace = where(request)

    def cancel(job_id: str) -> bool:
        return Job(job_id, client, namespace).cancel()

    return JSONResponse(await in_thread(_each, ids, cancel, "canceled", "it had already ended"))


async def requeue_jobs(request: Request) -> JSONResponse:
    body = await body_of(request)
    letters = _queue(request, body.get("queue")).failed
    return JSONResponse(
        await in_thread(
            _each, _ids(body), letters.requeue, "requeued", "not a dead letter of this queue"
        )
    )


async def promote_jobs(request: Request) -> JSONResponse:
    body = await body_of(request)
    queue = _queue(request, body.get("queue"))
    return JSONResponse(
        await in_thread(
            _each, _ids(body), queue.promote, "promoted", "neither scheduled nor deferred"
        )
    )


async def empty_queue(request: Request) -> JSONResponse:
    await body_of(request)
    queue = _queue(request, request.path_params["queue"])
    return JSONResponse({"deleted": await in_thread(queue.empty)})


async def delete_queue(request: Request) -> JSONResponse:
    await body_of(request)
    queue = _queue(request, request.path_params["queue"])
    return JSONResponse({"deleted": await in_thread(queue.delete)})


async def pause_queue(request: Request) -> JSONResponse:
    await body_of(request)
    await in_thread(_queue(request, request.path_params["queue"]).pause)
    return JSONResponse({"paused": True})


async def resume_queue(request: Request) -> JSONResponse:
    await body_of(request)
    await in_thread(_queue(request, request.path_params["queue"]).resume)
    return JSONResponse({"paused": False})


def _cap(body: Dict[str, Any], name: str) -> Optional[Any]:
    value = body.get(name)
    return None if value in (None, "") else value


async def set_limits(request: Request) -> JSONResponse:
    """{"concurrency", "rate", "group_concurrency", "group_rate"} replace the queue's caps
    (a missing or empty one: no such cap); {"clear": true} removes them all."""
    body = await body_of(request)
    queue = _queue(request, request.path_params["queue"])
    own = (_cap(body, "concurrency"), _cap(body, "rate"))
    group = (_cap(body, "group_concurrency"), _cap(body, "group_rate"))
    if body.get("clear") and any(v is not None for v in own + group):
        raise HTTPException(400, "clear removes every limit: give no other limit with it")

    def apply() -> Optional[Dict[str, Any]]:
        queue.set_limits(*own)
        queue.set_group_limits(*group)
        return queue.limits.report().get("limits")

    try:
        limits = await in_thread(apply)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None
    return JSONResponse({"limits": limits})
