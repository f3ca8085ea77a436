"""SPEC 18's dropped counter where operators look: `rqconc events --stats`, a line in `rqconc
info`, rqconc_events_dropped_total; and `--events-retention` takes a duration."""

import json

import redis
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from rqconc.cli.app import cli
from rqconc.metrics.exposition import render
from rqconc.queue.events import EventStream
from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from rqconc.worker.event_retention import EventRetention
from rqconc.worker.redis_source import RedisSource


def run(*argv):
    return CliRunner().invoke(cli, list(argv), catch_exceptions=False)


def test_events_stats_info_and_metrics_show_the_entries_dropped_unread(redis_server):
    url = redis_server.url
    client = redis.Redis.from_url(url)
    assert "the event stream dropped" not in run("info", "--url", url).output
    EventStream(client).ship(print, group="shippers", stop=lambda: True)
    Queue("s", connection=url).enqueue_many([("tests.queue.tasks:add", (1, 2))] * 12)
    RedisSource(url, events=EventRetention(3600, 5)).maintain()

    stats = json.loads(run("events", "--stats", "--json", "--url", url).output)
    assert stats["entries"] == 5 and stats["dropped"] == 7
    assert stats["groups"][0]["name"] == "shippers" and stats["groups"][0]["pending"] == 0
    shown = run("events", "--stats", "--url", url).output
    assert "entries: 5" in shown and "dropped before a consumer group had them: 7" in shown
    assert "the event stream dropped 7 entries" in run("info", "--url", url).output
    assert json.loads(run("info", "--json", "--url", url).output)["events_dropped"] == 7
    (family,) = [
        f
        for f in text_string_to_metric_families(render(url).decode())
        if f.name == "rqconc_events_dropped"
    ]
    assert [(s.name, s.labels, s.value) for s in family.samples] == [
        ("rqconc_events_dropped_total", {"namespace": "rqconc"}, 7.0)
    ]
    assert client.hget(KeySpace("rqconc").metrics, "events_dropped") == b"7"


def test_events_retention_takes_a_duration_and_refuses_nonsense():
    shown = run("worker", "--events-retention", "2h", "--events-max", "50", "--print-config")
    assert shown.exit_code == 0, shown.output
    assert "7200" in shown.output and "50" in shown.output
    for wrong in ("soon", "0", "-3h"):
        refused = CliRunner().invoke(cli, ["worker", "--events-retention", wrong])
        assert refused.exit_code == 2 and "is not a duration" in refused.output, wrong
