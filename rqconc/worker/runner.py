"""Running one job's function in a worker child, through the execution path eager mode
shares (rqconc/queue/execution.py): what the worker adds is where a callback's parent job
is read (Redis), how a returned `Next` is made ready to store, the allow-list hint of its
command line, and decoding the fields a take returned. Nothing here writes to Redis;
`outcomes.Recorder` records what `run` returns.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from rqconc.queue.execution import Execution, Outcome, Refused
from rqconc.queue.job import Job
from rqconc.queue.workflow.flows import Next
from rqconc.queue.workflow.next_stage import prepare_next_stage
from rqconc.store.steps.core import text
from rqconc.worker.connections import Connections


def decoded(payload: Dict[str, Any]) -> Tuple[Dict[str, str], Optional[Outcome]]:
    """The job's fields as text; a field that is not UTF-8 fails the job (its bytes were not
    written by rqconc) instead of running it on mangled data."""
    fields, bad = {}, []
    for name, value in payload.items():
        if type(name) is not str:  # a take's names are (scripts.TAKE_FIELDS): no call a field
            name = text(name)
        try:
            fields[name] = value.decode() if isinstance(value, bytes) else str(value)
        except UnicodeDecodeError:
            fields[name] = value.decode("utf-8", "replace")
            bad.append(name)
    if not bad:
        return fields, None
    message = f"corrupt job data: field(s) {', '.join(bad)} are not valid UTF-8"
    return fields, Outcome(exc=("ValueError", message, ""))


class JobRunner(Execution):
    """Resolves and runs jobs for one worker; resolved functions are cached per process."""

    def __init__(
        self,
        connections: Connections,
        allow: Sequence[str],
        allow_pickle: bool,
        cli: bool = False,
    ) -> None:
        self.connections = connections  # a callback reads its parent job, a flow its stage
        # The not-allowed hint names what the user typed: an option, or a Supervisor argument.
        hint = _cli_hint if cli else _supervisor_hint
        super().__init__(allow, allow_pickle, self._parent, self._next_stage, hint)

    def _parent(self, parent_id: str) -> Job:
        client, keys = self.connections.client, self.connections.keys
        stored = client.hgetall(keys.job(parent_id))
        return Job(parent_id, client, keys.namespace, stored, allow_pickle=self.allow_pickle)

    def group_results(self, group_id: str) -> Optional[List[Optional[str]]]:
        """A fired chord's results, kept in its group's hash until the callback ended
        (lua/include/groups.lua): one HGET a member, so that no single command copies more
        than one result however many and large they are."""
        client, group = self.connections.client, self.connections.keys.group(group_id)
        kept, total = client.hmget(group, "results_kept", "total")
        if kept != b"1":
            return None
        pipe = client.pipeline(transaction=False)
        for index in range(1, int(total) + 1):
            pipe.hget(group, f"r{index}")
        return [None if value is None else text(value) for value in pipe.execute()]

    def _next_stage(self, stage: Next) -> Tuple[str, Dict[str, Any]]:
        return prepare_next_stage(stage, self.connections.client, self.connections.keys.namespace)


def _cli_hint(prefix: str) -> str:
    return f"start the worker with --allow {prefix}"


def _supervisor_hint(prefix: str) -> str:
    return f"pass Supervisor(allow=[{prefix!r}])"


__all__ = ["JobRunner", "Outcome", "Refused", "decoded"]
