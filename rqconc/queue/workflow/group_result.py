"""A group of jobs enqueued together, as `Queue.enqueue_group` returns it: `Group` (its id,
jobs, `status()`, `get()`), and the preparation of its members (rqconc/queue/workflow/groups.py
builds groups and chords; lua/enqueue_group.lua stores them; docs/architecture.md, Groups).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import redis

from rqconc import errors
from rqconc.connection.clients import ConnectionLike, connect, translated_errors
from rqconc.queue.job import Job
from rqconc.queue.options import refuse, take_options
from rqconc.queue.workflow.signature import Signature, signature_of
from rqconc.store.defaults import DEFAULT_RESULT_TTL
from rqconc.store.keys import KeySpace
from rqconc.store.status import JobStatus
from rqconc.store.steps.core import text

Prepare = Callable[[Sequence[Any], Dict[str, Any]], List[Tuple[str, int, Dict[str, str]]]]
Member = Tuple[str, int, Dict[str, str]]

_ENDED_BADLY = (JobStatus.FAILED.value, JobStatus.CANCELED.value)


def _prepared(prepare: Prepare, signature: Signature, what: str) -> Member:
    """One job of a group (or its chord callback) as (id, priority, fields), nothing written."""
    kwargs = dict(signature.kwargs)
    options = {**take_options(kwargs), **signature.options}
    # Members get fresh ids (the group's step never refuses one) and wait for nothing but
    # the queue: a member waiting on a parent would hold its chord on that parent too.
    refuse(options, ("job_id", "depends_on"), what)
    return prepare([(signature.func, tuple(signature.args), kwargs)], options)[0]


def prepare_group(
    prepare: Prepare, calls: Sequence[Any], chord: Optional[Signature]
) -> Tuple[List[Member], Optional[Tuple[str, Dict[str, str]]], int]:
    """A group's members, its chord callback (id, fields) and how long its record lives
    once the group ended (the longest result_ttl of its members, at least the default)."""
    if not calls:
        raise ValueError("a group needs at least one job")
    members = [_prepared(prepare, signature_of(c), "a job of a group") for c in calls]
    callback = None
    if chord is not None:
        chord_id, _, fields = _prepared(prepare, chord, "a chord's callback")
        callback = (chord_id, fields)
    ttls = [int(fields.get("result_ttl", DEFAULT_RESULT_TTL)) for _, _, fields in members]
    return members, callback, -1 if -1 in ttls else max(DEFAULT_RESULT_TTL, *ttls)


def new_group_id() -> str:
    return os.urandom(16).hex()


class Group:
    """Jobs enqueued together by `rqconc.group(...).enqueue(queue)`; `chord` is the callback
    job of a chord (`.then(...)`), `deferred` until every job of the group finished."""

    def __init__(
        self,
        group_id: str,
        jobs: Sequence[Job],
        chord: Optional[Job] = None,
    ) -> None:
        self.id = group_id
        self.jobs = list(jobs)
        self.chord = chord

    def __repr__(self) -> str:
        return f"Group({self.id!r}, {len(self.jobs)} jobs)"

    @classmethod
    def fetch(
        cls,
        group_id: str,
        connection: ConnectionLike = None,
        namespace: str = "rqconc",
        *,
        allow_pickle: bool = False,
    ) -> Group:
        """Load a group; `rqconc.errors.NoSuchJob` if it does not exist (any more)."""
        client, keys = connect(connection), KeySpace(namespace)
        with translated_errors(client):
            ids, chord_id = client.hmget(keys.group(group_id), "jobs", "chord_id")
        if ids is None:
            raise errors.NoSuchJob(f"no group {group_id!r} (never enqueued, or it expired)")

        job_ids = json.loads(text(ids))
        if chord_id is not None:
            job_ids.append(text(chord_id))
        jobs = Job.fetch_many(job_ids, client, namespace)  # one round trip
        found = [job or Job(i, client, namespace) for i, job in zip(job_ids, jobs)]
        for job in found:  # a pickle queue's caller opts in, as with Job.fetch
            job.allow_pickle = allow_pickle
        if chord_id is None:
            return cls(group_id, found)
        return cls(group_id, found[:-1], found[-1])

    @property
    def connection(self) -> redis.Redis:
        return self.jobs[0].connection

    def _statuses(self) -> List[Optional[str]]:
        client, keys = self.connection, KeySpace(self.jobs[0].namespace)
        pipe = client.pipeline(transaction=False)
        for job in self.jobs:
            pipe.hget(keys.job(job.id), "status")
        with translated_errors(client):
            return [None if s is None else text(s) for s in pipe.execute()]

    def status(self) -> Dict[str, int]:
        """How many jobs of the group are in each status (one round trip); a job that
        expired counts as "missing"."""
        return dict(Counter(s or "missing" for s in self._statuses()))

    def get(self, timeout: Optional[float] = None) -> List[Any]:
        """Block until every job of the group ended; their return values in group order,
        or `JobFailed` of the first failed job (in group order). `TimeoutError` when
        `timeout` seconds pass first (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for job, status in zip(self.jobs, self._statuses()):
            if status in _ENDED_BADLY:  # raise it now, not after waiting for the others
                job.get(0)
        results = []
        for job in self.jobs:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            results.append(job.get(left))
        return results
