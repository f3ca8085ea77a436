"""SPEC section 8: nothing atomic spans two namespaces. A dependency, a flow's next stage, a
callback or a group member of another namespace is refused with ValueError when the job is
enqueued, and nothing is written."""

import pytest

from rqconc import Dependency, JobFailed, JobStatus, Queue, group
from rqconc.queue.task import Task
from rqconc.worker.redis_source import RedisSource
from tests.queue import tasks
from tests.queue.helpers import take_and_run

REFUSED = "nothing atomic spans two namespaces"


@pytest.fixture
def spaces(redis_url):
    """Queue `q` in namespace `a` and in namespace `b`, on one server."""
    return Queue("q", connection=redis_url, namespace="a"), Queue(
        "q", connection=redis_url, namespace="b"
    )


def jobs_in_a(queue):
    return sorted(queue.connection.keys("{a}:job:*"))


def test_a_parent_job_of_another_namespace_is_refused(spaces):
    a, b = spaces
    other, own = b.enqueue(tasks.add, 1, 1), Queue("p", a.connection, namespace="a")
    parent = own.enqueue(tasks.add, 2, 2)
    before = jobs_in_a(a)
    for depends_on in (other, [parent, other], Dependency([other], allow_failure=True)):
        with pytest.raises(ValueError, match=f"namespace 'b'.*namespace 'a'.*{REFUSED}"):
            a.enqueue(tasks.add, 3, 3, depends_on=depends_on)
        with pytest.raises(ValueError, match=REFUSED):
            a.enqueue_many([(tasks.add, (3, 3))], depends_on=depends_on)
    assert a.job_ids == [] and jobs_in_a(a) == before
    # Its own namespace's parent (or a bare id, taken to be its own) is fine.
    child = a.enqueue(tasks.add, 3, 3, depends_on=[parent, parent.id])
    assert child.status == JobStatus.DEFERRED


def test_a_callback_bound_to_another_namespace_is_refused(spaces):
    a, _ = spaces
    foreign = Task(tasks.note_success, "q", namespace="b")
    for option in ("on_success", "on_failure"):
        with pytest.raises(ValueError, match=f"{option}: the callback belongs to namespace 'b'"):
            a.enqueue(tasks.add, 1, 1, **{option: foreign})
    assert a.job_ids == [] and jobs_in_a(a) == []
    own = Task(tasks.note_success, "q", namespace="a")
    assert a.enqueue(tasks.add, 1, 1, on_success=own, on_failure=tasks.note_failure).id


def test_group_members_and_a_chord_of_another_namespace_are_refused(spaces):
    a, _ = spaces
    foreign = Task(tasks.add, "q", namespace="b")
    own = Task(tasks.add, "q", namespace="a")
    with pytest.raises(ValueError, match="a job of the group belongs to namespace 'b'"):
        group(own.s(1, 2), foreign.s(3, 4)).enqueue(a)
    with pytest.raises(ValueError, match="the chord's callback belongs to namespace 'b'"):
        group(own.s(1, 2)).then(foreign).enqueue(a)
    assert a.job_ids == [] and jobs_in_a(a) == []
    assert len(group(own.s(1, 2), (tasks.add, (3, 4))).enqueue(a).jobs) == 2


def test_a_next_stage_on_another_namespace_fails_the_stage_and_enqueues_nothing(spaces, redis_url):
    a, _ = spaces
    url = a.connection
    stage = a.enqueue("tests.queue.namespace_jobs:hand_over", redis_url, "b")
    take_and_run(RedisSource(redis_url, queues=["q"], allow=["tests"], namespace="a"))
    with pytest.raises(JobFailed) as info:
        stage.get(timeout=5)
    assert info.value.exc_type == "ValueError" and REFUSED in info.value.exc_message
    assert Queue("next", url, namespace="b").job_ids == [] and stage.next_id is None
