"""No step adds a spoiler field to a lean job (docs/lua.md).

A job enqueued without the fields only callbacks, flows, groups, unique keys and ttls have
(scripts.LEAN_SPOILERS) is stored `lean`, and the hot steps then never ask for those fields:
a step that added one to such a job without dropping `lean` would make take and complete
miss it. Which writes reach a job is only known at run time (most steps write field lists
built by Python or by cjson), so this runs every step that writes such a field, on a real
worker, and checks every job hash while they run and once they all ended.
"""

import rqconc
from rqconc import Dependency, Queue, Retry
from rqconc.store.scripts import LEAN_SPOILERS
from tests.support.waiting import wait_for

TASKS = "tests.queue.tasks"
ENDED = {"finished", "failed", "canceled"}


def lean_with_spoilers(client, pattern):
    """Job hashes marked lean that hold a spoiler field: {key: fields}."""
    wrong = {}
    for key in client.scan_iter(pattern, count=500):
        fields = client.hgetall(key)
        if fields.get(b"lean") == b"1":
            spoilers = {f.decode() for f in fields} & LEAN_SPOILERS
            if spoilers:
                wrong[key.decode()] = sorted(spoilers)
    return wrong


def test_no_step_adds_a_spoiler_field_to_a_lean_job(redis_url, start_worker):
    namespace = "leanjobs"
    q = Queue("lean", connection=redis_url, namespace=namespace)
    client = q.connection
    every_job = q.keys.job("*")
    jobs = [q.enqueue(f"{TASKS}:add", i, 1) for i in range(3)]  # plain: lean
    jobs.append(q.enqueue(f"{TASKS}:first_stage", 1))  # complete writes the next stage's links
    jobs.append(q.enqueue(f"{TASKS}:add", 2, 2, on_success=f"{TASKS}:note_success"))
    jobs.append(q.enqueue(f"{TASKS}:boom", on_failure=f"{TASKS}:note_failure"))
    jobs.append(q.enqueue(f"{TASKS}:boom", retry=Retry(max=1)))  # fail: a retry, then failed
    parent = q.enqueue(f"{TASKS}:add", 5, 5)
    jobs += [parent, q.enqueue(f"{TASKS}:add", 1, 2, depends_on=parent)]
    failing = q.enqueue(f"{TASKS}:boom")
    jobs += [failing, q.enqueue(f"{TASKS}:add", 1, 2, depends_on=Dependency(failing))]
    group = rqconc.group((f"{TASKS}:add", (1, 1)), (f"{TASKS}:add", (2, 2)))
    chorded = group.then(f"{TASKS}:echo", "chord").enqueue(q)  # the chord gets its results
    jobs += [*chorded.jobs, chorded.chord]
    jobs.append(q.enqueue(f"{TASKS}:add", 1, 1, unique_key="u", debounce=0.2))
    jobs.append(q.enqueue(f"{TASKS}:add", 2, 1, unique_key="u", debounce=0.2))  # debounced
    jobs.append(q.enqueue(f"{TASKS}:add", 3, 3, ttl=60))
    canceled = q.enqueue(f"{TASKS}:add", 4, 4)
    canceled.cancel()
    assert lean_with_spoilers(client, every_job) == {}
    assert client.hget(q.keys.job(jobs[0].id), "lean") == b"1"  # the check can see a lean job
    start_worker("threading", 2, redis_url, "--namespace", namespace, "-q", "lean,stage2,stage3")

    def all_ended():
        assert lean_with_spoilers(client, every_job) == {}  # while the steps run, too
        statuses = {key: client.hget(key, "status") for key in client.scan_iter(every_job)}
        return len(statuses) >= len(jobs) + 4 and all(
            s is not None and s.decode() in ENDED for s in statuses.values()
        )

    wait_for(all_ended, timeout=40, message="every job ended")
    assert lean_with_spoilers(client, every_job) == {}
    # Each field the steps add was added: the scenarios above reached those writes.
    written = set()
    for key in client.scan_iter(every_job):
        written |= {f.decode() for f in client.hkeys(key)}
    # (A chord's callback gets no field: it reads its group's results by reference.)
    assert {"flow_id", "callback_of", "parent_result"} <= written
