"""rqconc/engine/slots/combiner.py with real threads: calls that pile up while a batch
travels go together in the next one, each caller gets its own answer, and failures reach
every caller."""

import threading
import time

import pytest

from rqconc.engine.slots.combiner import Combiner


class Abandoned(Exception):
    pass


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.005)


def first_batch_held(values, limit, later):
    """Call with every value from a thread of its own: the first caller's batch travels
    until every other caller waits; each later batch is answered by `later(number, values)`.
    Returns the combiner, the batches it ran, and what each caller got (answer or error)."""
    batches, gate = [], threading.Event()

    def run(batch):
        batches.append(list(batch))
        if len(batches) == 1:
            gate.wait(10)
            return list(batch)
        return later(len(batches), batch)

    combiner = Combiner(run, limit=limit, abandoned=Abandoned)
    answers, errors = {}, {}

    def caller(value):
        try:
            answers[value] = combiner.call(value)
        except BaseException as exc:  # noqa: B036 - the test looks at what each caller got
            errors[value] = exc

    threads = [threading.Thread(target=caller, args=(v,)) for v in values]
    threads[0].start()
    wait_for(lambda: len(batches) == 1)
    for thread in threads[1:]:
        thread.start()
    wait_for(lambda: len(combiner._waiting) == len(values) - 1)
    gate.set()
    for thread in threads:
        thread.join(10)
    return combiner, batches, answers, errors


def test_a_lone_call_goes_alone_and_calls_made_meanwhile_go_together():
    _, batches, answers, errors = first_batch_held(
        range(6), 64, lambda _, batch: [v * 10 for v in batch]
    )
    assert batches[0] == [0] and sorted(batches[1]) == [1, 2, 3, 4, 5] and len(batches) == 2
    assert answers == {v: v * 10 for v in range(6)} and not errors


def test_a_batch_holds_at_most_limit_calls():
    _, batches, answers, _ = first_batch_held(range(5), 2, lambda _, batch: list(batch))
    assert [len(b) for b in batches] == [1, 2, 2] and answers == {v: v for v in range(5)}


@pytest.mark.parametrize("raised", [ConnectionError("gone"), KeyboardInterrupt()])
def test_a_failed_batch_reaches_every_caller_of_it_and_the_next_batch_still_runs(raised):
    def later(number, batch):
        if number == 2:
            raise raised
        return list(batch)

    combiner, batches, answers, errors = first_batch_held(range(4), 64, later)
    failed = batches[1]
    assert answers == {0: 0} and set(errors) == set(failed) == {1, 2, 3}
    leader, *others = failed
    if isinstance(raised, KeyboardInterrupt):  # the leader's own; the others: abandoned
        assert errors[leader] is raised
        assert all(isinstance(errors[v], Abandoned) for v in others)
    else:
        assert all(errors[v] is raised for v in failed)
    assert combiner.call(7) == 7  # nobody is left leading a batch that ended
