"""SPEC 17: finished and failed counts and run times per function, at most 100 functions a
queue, the rest counted as func="other"; driven through the steps (no worker needed), read
back by read.snapshot() and by prometheus-client's parser from /metrics' text."""

from prometheus_client.parser import text_string_to_metric_families

from rqconc.metrics.exposition import render
from rqconc.metrics.read import snapshot
from rqconc.store.defaults import MAX_FUNCTIONS
from rqconc.store.steps.batch import complete_many, take_many
from rqconc.store.steps.core import CompleteReply
from tests.metrics.many_functions import NAMES

LEASE_MS = 15_000


def run_alone(steps, claim):
    job_id, _ = steps.take(claim, ["default"], LEASE_MS, "w")
    assert steps.complete(claim, job_id, "default", "null", "json", "w") is CompleteReply.RECORDED


def series(url, family):
    """{func: value} of one family's samples of queue `default`."""
    (found,) = [f for f in text_string_to_metric_families(render(url).decode()) if f.name == family]
    return {s.labels["func"]: s.value for s in found.samples if s.labels["queue"] == "default"}


def test_101_functions_give_100_func_series_and_other(queue, steps, client, keys, redis_url):
    """f000..f099 are named in the order their first runs end; f100 counts as `other`, also
    when its runs end in one step of several (complete_many's summed fields)."""
    assert MAX_FUNCTIONS == 100
    queue.enqueue_many([(name, ()) for name in NAMES[:100]])
    for i in range(100):
        run_alone(steps, f"c{i}")
    queue.enqueue_many([(NAMES[100], ()), (NAMES[100], ()), (NAMES[0], ())])
    taken = take_many(steps, ["m1", "m2", "m3"], ["default"], LEASE_MS, "w")
    completions = [(claim, job_id, "default", "null", "json", "") for claim, (job_id, _) in taken]
    replies = complete_many(steps, completions, ["default"], LEASE_MS, "w")
    assert [code for code, _ in replies] == [CompleteReply.RECORDED] * 3

    metrics = snapshot(client).queue("default")
    assert set(metrics.functions) == set(NAMES[:100]) | {"other"}
    assert metrics.functions["other"].finished == 2
    assert metrics.functions[NAMES[0]].finished == 2
    assert all(metrics.functions[name].finished == 1 for name in NAMES[1:100])
    assert metrics.finished == 103 and metrics.run.count == 103  # the queue: every function
    assert client.scard(keys.functions("default")) == 100
    assert not [f for f in client.hkeys(keys.metrics) if NAMES[100].encode() in f]

    finished = series(redis_url, "rqconc_function_jobs_finished")
    assert set(finished) == set(NAMES[:100]) | {"other"} and finished["other"] == 2
    runs = series(redis_url, "rqconc_function_run_seconds")  # its _count, _sum and buckets
    assert set(runs) == set(finished)


def test_failed_runs_and_failures_count_per_function(queue, steps, client, redis_url):
    """A retried run and a final failure of one function; the other's run finishes."""
    queue.enqueue_many([(NAMES[1], ()), (NAMES[2], ())])
    exc = ("ValueError", "no", "Traceback ...")
    job_id, _ = steps.take("a", ["default"], LEASE_MS, "w")
    steps.fail("a", job_id, "default", exc, retry_in_ms=0, worker="w")
    run_alone(steps, "b")  # NAMES[2]
    job_id, _ = steps.take("c", ["default"], LEASE_MS, "w")  # the retry of NAMES[1], now due
    steps.fail("c", job_id, "default", exc, worker="w")

    metrics = snapshot(client).queue("default")
    first, second = metrics.functions[NAMES[1]], metrics.functions[NAMES[2]]
    assert (first.run.count, first.failed_runs, first.failed, first.finished) == (2, 2, 1, 0)
    assert (second.run.count, second.failed_runs, second.failed, second.finished) == (1, 0, 0, 1)
    assert (metrics.failed, metrics.finished) == (1, 1)
    assert series(redis_url, "rqconc_function_jobs_failed") == {NAMES[1]: 1, NAMES[2]: 0}
