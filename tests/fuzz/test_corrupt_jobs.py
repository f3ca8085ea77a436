"""Corrupt job data written straight into Redis (SPEC section 4): missing fields, wrong types,
binary, huge and unicode values. For running workers (forking and threading): each bad job
fails with a clear reason, the workers stay up, and good jobs around it all finish.
"""

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rqconc import Queue
from rqconc.queue.execution import Execution
from rqconc.store.keys import queue_score
from tests.fuzz.conftest import PROPERTY_TIMEOUT
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.fuzz,
    pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning"),
]

GOOD_FUNC = "tests.fuzz.jobs:echo"


def _is_utf8(value):
    try:
        value.decode()
    except UnicodeDecodeError:
        return False
    return True


# Huge values: a drawn character and length, not 100,000 drawn characters.
huge_text = st.tuples(st.sampled_from("x\u00e9\u4e2d\U0001f600"), st.integers(50_000, 300_000)).map(
    lambda t: t[0] * t[1]
)
junk_text = st.one_of(st.text(max_size=50), huge_text)
# Bytes that are not UTF-8 get a test of their own (test_binary_fields.py).
utf8_bytes = st.binary(max_size=64).filter(_is_utf8)
junk = st.one_of(
    junk_text,
    utf8_bytes,
    st.integers().map(str),
    st.floats(allow_nan=True).map(repr),
    st.sampled_from(["", "null", "[]", "{}", "-1", "1e309", "NaN", "\x00", "true"]),
)
# The workers' allow-list (start_worker's --allow tests), to tell refusals apart.
WORKER = Execution(["tests"], False, parent_of=lambda _: None, next_stage=lambda _: None)


def _refused_by_the_allow_list(value):
    """A well-formed name outside the allow-list is not corrupt data: a worker gives that
    job back for a worker that allows it (tests/worker/test_allow_refusals.py)."""
    name = value.decode() if isinstance(value, bytes) else value
    return WORKER.not_allowed(name) is not None


# Values that surely break the job: the function, its arguments, or how they are decoded.
bad_func = st.one_of(
    junk.filter(lambda v: v != GOOD_FUNC and not _refused_by_the_allow_list(v)),
    st.sampled_from(
        [
            "tests.fuzz.jobs:missing",
            "tests.fuzz.jobs",
            ":echo",
            "tests.fuzz.jobs:",
            "tests.fuzz.nope:echo",
            "tests.fuzz.jobs:echo.__globals__",
            "tests..fuzz:echo",
            "tests.fuzz.jobs:echo:echo",
            "os/path:join",
            "tests.fuzz.jobs:\u00e9cho",
            "tests/fuzz/jobs:echo",
        ]
    ),
)
bad_args = st.one_of(
    junk.filter(lambda v: not _one_item_list(v)),
    st.lists(st.integers(), min_size=2, max_size=3).map(json.dumps),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2).map(json.dumps),
)
bad_kwargs = st.one_of(
    junk.filter(lambda v: v not in ("{}", "")),
    st.dictionaries(
        st.text(min_size=1, max_size=5).filter(lambda k: k != "value"),
        st.integers(),
        min_size=1,
        max_size=2,
    ).map(json.dumps),
    st.lists(st.integers(), max_size=2).map(json.dumps),
)
bad_serializer = junk.filter(lambda v: v not in ("json", b"json"))
FATAL = {"func": bad_func, "args": bad_args, "kwargs": bad_kwargs, "serializer": bad_serializer}
# result_ttl / failure_ttl junk: test_binary_fields.py.
OTHER = (
    "timeout",
    "priority",
    "retry",
    "meta",
    "attempts",
    "lost",
    "description",
    "created_at",
    "depends_on",
    "on_success",
    "on_failure",
    "callback_of",
    "next_id",
)


def _one_item_list(value):
    try:
        decoded = json.loads(value)
    except (ValueError, TypeError, UnicodeDecodeError):
        return False
    return isinstance(decoded, list) and len(decoded) == 1


@st.composite
def corruptions(draw):
    """(fields to set, fields to delete): at least one fatal change, any others besides."""
    fatal = draw(st.lists(st.sampled_from(sorted(FATAL)), min_size=1, max_size=4, unique=True))
    changes, deleted = {}, []
    for name in fatal:
        if name == "func" and draw(st.booleans()):
            deleted.append(name)  # a missing function is as fatal as a wrong one
        else:
            changes[name] = draw(FATAL[name])
    for name in draw(st.lists(st.sampled_from(OTHER), max_size=4, unique=True)):
        if draw(st.booleans()):
            deleted.append(name)
        else:
            changes[name] = draw(junk)
    return changes, deleted


def _inject(client, queue, changes, deleted, seq):
    """Store a job like enqueue does, corrupt it, and only then make it visible."""
    job_id, _priority, fields = queue.prepare([(GOOD_FUNC, ("ok",), {})], {})[0]
    job_id = f"bad-{seq}-{job_id[:8]}"
    fields = dict(fields, id=job_id, status="queued")
    fields.update(changes)
    for name in deleted:
        fields.pop(name, None)
    keys = queue.keys
    pipe = client.pipeline(transaction=True)
    pipe.hset(
        keys.job(job_id),
        mapping={k: v if isinstance(v, (bytes, str)) else str(v) for k, v in fields.items()},
    )
    pipe.execute()
    order = client.incr(keys.seq)
    client.zadd(keys.queue("fuzz"), {job_id: queue_score(1, order)})
    client.zadd(keys.marker("fuzz"), {"0": 0})
    return job_id


_count = [0]


@pytest.mark.timeout(PROPERTY_TIMEOUT)
@given(corruptions())
def test_corrupt_job_fails_clearly_and_harms_nothing(fuzz_redis, fuzz_workers, corruption):
    changes, deleted = corruption
    _count[0] += 1
    client = fuzz_redis.client()
    queue = Queue("fuzz", connection=fuzz_redis.url)
    before = queue.enqueue(GOOD_FUNC, "before")
    bad = _inject(client, queue, changes, deleted, _count[0])
    after = queue.enqueue(GOOD_FUNC, ["after", "\u4e2d"])
    key = queue.keys.job(bad)
    status = wait_for(
        lambda: _ended(client.hget(key, "status")),
        timeout=15,
        message=f"corrupt job {bad} to end ({changes!r:.300}, deleted {deleted})",
    )
    exc_type, exc_message = client.hmget(key, ["exc_type", "exc_message"])
    assert status == b"failed", (status, changes, deleted)
    assert exc_type and exc_message, (exc_type, exc_message)
    assert before.get(timeout=15) == "before"
    assert after.get(timeout=15) == ["after", "\u4e2d"]
    for worker in fuzz_workers:
        assert worker.process.poll() is None, worker.output()[-3000:]


@pytest.mark.parametrize("field", ["serializer", "func"])
def test_failure_message_of_a_huge_corrupt_value_stays_short(fuzz_redis, fuzz_workers, field):
    client = fuzz_redis.client()
    queue = Queue("fuzz", connection=fuzz_redis.url)
    value = "tests.fuzz.jobs:" + "\u00e9" * 300_000 if field == "func" else "\u00e9" * 300_000
    bad = _inject(client, queue, {field: value}, [], f"huge-{field}")
    key = queue.keys.job(bad)
    status = wait_for(
        lambda: _ended(client.hget(key, "status")), timeout=15, message=f"{bad} to end"
    )
    assert status == b"failed"
    message = client.hget(key, "exc_message")
    assert len(message) < 5000, f"{len(message)} bytes: {message[:200]!r}..."


def _ended(status):
    return status if status in (b"finished", b"failed", b"canceled") else None


def test_workers_survived_the_fuzzing_without_losing_children(fuzz_redis, fuzz_workers):
    """Runs after the fuzzing (same module): nothing crashed a child or a supervisor, and
    no job is left started or queued."""
    time.sleep(0)  # ordering only: pytest runs the module's tests in file order
    client = fuzz_redis.client()
    queue = Queue("fuzz", connection=fuzz_redis.url)
    assert queue.enqueue(GOOD_FUNC, "last").get(timeout=15) == "last"
    assert queue.count == 0 and queue.started_job_ids == []
    for worker in fuzz_workers:
        assert worker.process.poll() is None
        log = worker.output()
        assert "died" not in log and "Traceback" not in log, log[-3000:]
    assert client.zcard(queue.keys.active) == 0
