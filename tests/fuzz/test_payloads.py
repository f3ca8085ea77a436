"""Huge payloads, unicode and binary in every field, through the public API (SPEC sections 3,
4, 7): what JSON carries comes back exactly from a real worker; what it cannot carry is a
TypeError (or ValueError for a bad name) at enqueue time, with nothing written."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rqconc import Job, Queue
from rqconc.store.keys import check_queue_name
from tests.fuzz.conftest import PROPERTY_TIMEOUT

pytestmark = [
    pytest.mark.fuzz,
    pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning"),
]

chars = st.characters(blacklist_categories=("Cs",))  # lone surrogates: tested below
texts = st.text(alphabet=chars, max_size=30)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=15,
)
ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")),
    min_size=1,
    max_size=40,
).filter(lambda s: not any(c.isspace() for c in s))


@pytest.mark.timeout(PROPERTY_TIMEOUT)
@given(
    value=json_values,
    description=texts,
    meta=st.dictionaries(texts, json_values, max_size=3),
    as_kwarg=st.booleans(),
)
def test_unicode_everywhere_round_trips_through_a_worker(
    fuzz_redis, fuzz_workers, value, description, meta, as_kwarg
):
    queue = Queue("fuzz", connection=fuzz_redis.url)
    if as_kwarg:
        job = queue.enqueue("tests.fuzz.jobs:echo", value=value, description=description, meta=meta)
    else:
        job = queue.enqueue("tests.fuzz.jobs:echo", value, description=description, meta=meta)
    assert job.get(timeout=15) == value
    fetched = Job.fetch(job.id, connection=fuzz_redis.url)
    assert fetched.description == (description or fetched.description)
    assert fetched.meta == meta


@pytest.mark.timeout(PROPERTY_TIMEOUT)
@given(job_id=ids)
def test_any_job_id_without_spaces_is_kept_exactly(fuzz_redis, job_id):
    queue = Queue("fuzz-ids", connection=fuzz_redis.url)
    client = fuzz_redis.client()
    if client.exists(queue.keys.job(job_id)):
        return  # drawn twice
    job = queue.enqueue("tests.fuzz.jobs:echo", 1, job_id=job_id)
    assert job.id == job_id
    assert Job.fetch(job_id, connection=fuzz_redis.url).id == job_id
    assert job_id in queue.job_ids


@pytest.mark.timeout(PROPERTY_TIMEOUT)
@given(name=st.text(alphabet=chars, max_size=20))
def test_any_queue_name_is_accepted_or_refused_cleanly(fuzz_redis, name):
    try:
        check_queue_name(name)
    except ValueError:
        with pytest.raises(ValueError, match="queue name"):
            Queue(name, connection=fuzz_redis.url)
        return
    queue = Queue(name, connection=fuzz_redis.url)
    job = queue.enqueue("tests.fuzz.jobs:echo", name)
    assert job.queue_name == name and job.id in queue.job_ids
    queue.empty()


binary_spots = st.sampled_from(["arg", "kwarg", "nested", "meta", "meta_key"])


@pytest.mark.timeout(PROPERTY_TIMEOUT)
@given(spot=binary_spots, data=st.binary(min_size=1, max_size=20))
def test_binary_is_refused_with_a_type_error_and_nothing_written(fuzz_redis, spot, data):
    queue = Queue("fuzz-bin", connection=fuzz_redis.url)
    client = fuzz_redis.client()
    before = client.dbsize()
    args, kwargs, meta = ["x"], {}, None
    if spot == "arg":
        args = [data]
    elif spot == "kwarg":
        args, kwargs = [], {"value": data}
    elif spot == "nested":
        args = [{"a": [1, {"b": data}]}]
    elif spot == "meta":
        meta = {"m": data}
    else:
        meta = {data: 1}
    with pytest.raises(TypeError) as refused:
        queue.enqueue("tests.fuzz.jobs:echo", *args, meta=meta, **kwargs)
    assert "bytes" in str(refused.value) or repr(data)[:20] in str(refused.value)
    assert client.dbsize() == before


def test_binary_names_are_refused(fuzz_redis):
    queue = Queue("fuzz-bin", connection=fuzz_redis.url)
    with pytest.raises(ValueError):
        queue.enqueue("tests.fuzz.jobs:echo", 1, job_id=b"raw-id")
    with pytest.raises(ValueError):
        Queue(b"raw-queue", connection=fuzz_redis.url)
    with pytest.raises((TypeError, ValueError)):
        queue.enqueue(b"tests.fuzz.jobs:echo", 1)


def test_ten_megabyte_argument_and_result(fuzz_redis, fuzz_workers):
    queue = Queue("fuzz", connection=fuzz_redis.url)
    big = "\u00e9" * 5_000_000  # 10 MB of UTF-8
    length = queue.enqueue("tests.fuzz.jobs:length", big)
    echoed = queue.enqueue("tests.fuzz.jobs:echo", big)
    assert length.get(timeout=30) == 5_000_000
    assert echoed.get(timeout=30) == big
    small = queue.enqueue("tests.fuzz.jobs:echo", "after")
    assert small.get(timeout=15) == "after"


@pytest.mark.parametrize("where", ["arg", "meta", "description"])
def test_lone_surrogate_is_carried_or_refused_with_type_error(fuzz_redis, where):
    queue = Queue("fuzz-sur", connection=fuzz_redis.url)
    value = "a\ud800b"
    options = {"arg": {}, "meta": {"meta": {"k": value}}, "description": {"description": value}}
    try:
        job = queue.enqueue(
            "tests.fuzz.jobs:echo", value if where == "arg" else 1, **options[where]
        )
    except TypeError as exc:
        assert "\\ud800" in str(exc) or "surrogate" in str(exc)
    else:
        assert Job.fetch(job.id, connection=fuzz_redis.url).id == job.id
