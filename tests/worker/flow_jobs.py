"""Flow stages for tests/worker/test_correctness_flows.py (run by workers under --allow tests)."""

from typing import Any, Dict, Tuple

from rqconc import Next, Queue


class RacingNext(Next):
    """A next stage whose id another producer creates right after the worker checked it
    is free: the window between the stage's return and its completion step."""

    def prepare(self, queue: Queue) -> Tuple[str, Dict[str, Any]]:
        staged = super().prepare(queue)
        other = Queue("default", connection=queue.connection, namespace=queue.keys.namespace)
        other.enqueue("tests.worker.jobs:add", 40, 2, job_id=staged[0], result_ttl=-1)
        return staged


def hand_on_racing(next_id: str) -> Next:
    return RacingNext("default", "tests.worker.jobs:add", 1, 1, job_id=next_id, result="x")
