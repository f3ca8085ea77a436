"""SPEC 18: the event stream's retention (lua/trim_events.lua, run by the maintenance pass)
keeps every entry newer than the retention up to the cap, and counts exactly the entries
it drops before a consumer group acknowledged them; on every Redis version (6.2 has no
`entries-read`/`lag`)."""

import re
from importlib import resources

import redis

from rqconc.queue.events import EventStream
from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from rqconc.store.steps.maintenance import MaintenanceSteps
from rqconc.worker.event_retention import EventRetention
from rqconc.worker.redis_source import RedisSource

KEYS = KeySpace("rqconc")
HOUR_MS = 3600 * 1000


def dropped(client):
    return int(client.hget(KEYS.metrics, "events_dropped") or 0)


def trim_events(client, *args, **kwargs):
    return MaintenanceSteps(client, KEYS).trim_events(*args, **kwargs)


def fill(client, n):
    """n real `queued` entries, appended by the enqueue step."""
    Queue("trim", connection=client).enqueue_many([("tests.queue.tasks:add", (1, 2))] * n)
    return [entry_id for entry_id, _ in client.xrange(KEYS.events)]


def test_without_a_consumer_group_the_cap_trims_and_nothing_counts_as_dropped(redis_url):
    client = redis.Redis.from_url(redis_url)
    ids = fill(client, 50)
    assert trim_events(client, 3600, 30) == (20, 0)
    assert [i for i, _ in client.xrange(KEYS.events)] == ids[20:]  # exactly the oldest went
    assert dropped(client) == 0


def test_entries_older_than_the_retention_go_and_newer_ones_stay(redis_url):
    client = redis.Redis.from_url(redis_url)
    now_ms = int(client.time()[0]) * 1000
    for age_ms in (3 * HOUR_MS, 2 * HOUR_MS + 1, HOUR_MS // 2):
        client.xadd(KEYS.events, {"event": "old"}, id=f"{now_ms - age_ms}-0")
    new = fill(client, 3)[3:]
    assert trim_events(client, 7200, 1000) == (2, 0)
    assert [i for i, _ in client.xrange(KEYS.events)][1:] == new


def test_only_entries_a_group_had_not_acknowledged_count_as_dropped(redis_url):
    """A group has been handed 10 entries and acknowledged 4; 40 of 60 go (the cap): the 4
    acknowledged are not lost, the 6 pending and the 30 never delivered are."""
    client = redis.Redis.from_url(redis_url)
    client.xgroup_create(KEYS.events, "shippers", id="0", mkstream=True)
    fill(client, 60)
    handed = client.xreadgroup("shippers", "a", {KEYS.events: ">"}, count=10)[0][1]
    client.xack(KEYS.events, "shippers", *[entry_id for entry_id, _ in handed[:4]])
    # 7 entries a call: the pass takes several calls and still counts each entry once.
    assert trim_events(client, 3600, 20, chunk=7) == (40, 36)
    assert client.xlen(KEYS.events) == 20 and dropped(client) == 36
    # Nothing more is due: another pass drops and counts nothing.
    assert trim_events(client, 3600, 20) == (0, 0) and dropped(client) == 36


def test_the_slowest_group_decides_and_each_entry_counts_once(redis_url):
    client = redis.Redis.from_url(redis_url)
    for group in ("fast", "slow"):
        client.xgroup_create(KEYS.events, group, id="0", mkstream=True)
    fill(client, 30)
    for entry_id, _ in client.xreadgroup("fast", "f", {KEYS.events: ">"}, count=30)[0][1]:
        client.xack(KEYS.events, "fast", entry_id)
    for entry_id, _ in client.xreadgroup("slow", "s", {KEYS.events: ">"}, count=5)[0][1]:
        client.xack(KEYS.events, "slow", entry_id)
    assert trim_events(client, 3600, 10) == (20, 15)


def test_the_maintenance_pass_trims_with_the_workers_retention(redis_url):
    client = redis.Redis.from_url(redis_url)
    EventStream(client).ship(print, group="shippers", stop=lambda: True)  # a group, no reads
    fill(client, 25)
    source = RedisSource(redis_url, events=EventRetention(3600, 10), maintenance_interval=0.001)
    source.maintain()
    assert client.xlen(KEYS.events) == 10 and dropped(client) == 15
    stats = EventStream(client).stats()
    assert stats["entries"] == 10 and stats["dropped"] == 15
    assert stats["groups"] == [
        {"name": "shippers", "consumers": 0, "pending": 0, "last_delivered_id": "0-0"}
    ]


def test_no_step_but_trim_events_trims_the_event_stream():
    """Each step's XADD is plain: trimming per step made every job pay for it (issue 36)."""
    lua_dir = resources.files("rqconc.store").joinpath("lua")
    files = [*lua_dir.iterdir(), *lua_dir.joinpath("include").iterdir()]
    steps = [path for path in files if path.name.endswith(".lua")]
    adding = [path.name for path in steps if "'XADD'" in path.read_text()]
    assert {"events.lua", "enqueue_one.lua", "progress.lua"} <= set(adding)
    trimming = [p.name for p in steps if re.search(r"'(MAXLEN|MINID)'", p.read_text())]
    assert trimming == ["trim_events.lua"]
