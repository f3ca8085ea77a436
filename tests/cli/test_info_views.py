"""`rqconc info QUEUE ...`, `--by-queue` and `-i/--interval` (SPEC section 14), as users run
them: subprocesses on real Redis, real workers, and a real SIGINT ending the live view."""

import json
import os
import pty
import select
import signal
import subprocess
import sys

from rqconc import Queue
from rqconc.worker.registry import list_workers
from tests.cli.test_commands import COUNTS, ENTRY, in_process, rqconc
from tests.support.waiting import wait_for
from tests.support.worker_process import ROOT, default_sigint


def enqueue_later(url, *queues):
    for name in queues:  # scheduled an hour ahead: no worker runs them during the test
        Queue(name, connection=url).enqueue_in(3600, "tests.worker.jobs:add", 1, 2)


def info_json(url, *args):
    result = in_process("info", "--json", "--url", url, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_named_queues_are_the_only_ones_shown(redis_server):
    enqueue_later(redis_server.url, "a", "b", "c")
    shown = info_json(redis_server.url, "c", "a")
    assert [q["name"] for q in shown["queues"]] == ["c", "a"]
    assert [q["scheduled"] for q in shown["queues"]] == [1, 1]
    text = in_process("info", "a", "--url", redis_server.url).stdout
    assert [line.split()[0] for line in text.splitlines()] == ["queue", "a"]
    bad = rqconc("info", "a b", "--url", redis_server.url)
    assert bad.returncode == 2 and "invalid queue name" in bad.stderr, bad.stderr


def test_by_queue_groups_workers_under_the_queues_they_serve(redis_server, start_worker):
    url = redis_server.url
    enqueue_later(url, "a", "b")
    start_worker("threading", 1, url, "-q", "a,new", "--name", "wa")
    start_worker("threading", 1, url, "-q", "all", "--name", "wall")
    wait_for(lambda: len(list_workers(redis_server.client())) == 2, 20, message="2 workers")
    grouped = info_json(url, "--by-queue")["by_queue"]
    # `new` never received a job: shown because a worker listens on it.
    assert grouped == {"a": ["wa", "wall"], "b": ["wall"], "new": ["wa", "wall"]}
    only_b = info_json(url, "b", "--by-queue")
    assert only_b["by_queue"] == {"b": ["wall"]}
    assert [w["name"] for w in only_b["workers"]] == ["wall"]
    text = in_process("info", "--by-queue", "--url", url).stdout
    assert "b: 1 worker\n" in text and "a: 2 workers\n" in text, text


def read_lines(stream, count, timeout=20):
    """The first `count` lines of a pipe, within `timeout` s."""
    lines = []
    buffered = b""

    def more():
        nonlocal buffered
        if select.select([stream], [], [], 0.1)[0]:
            buffered += os.read(stream.fileno(), 65536)
        while b"\n" in buffered and len(lines) < count:
            line, buffered = buffered.split(b"\n", 1)
            lines.append(line.decode())
        return len(lines) >= count

    wait_for(more, timeout, message=f"{count} lines")
    return lines


def test_interval_prints_one_json_object_per_tick_until_sigint(redis_server):
    enqueue_later(redis_server.url, "a")
    argv = [sys.executable, "-c", ENTRY, "info", "-i", "0.2", "--json", "--url", redis_server.url]
    live = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_sigint
    )
    try:
        ticks = [json.loads(line) for line in read_lines(live.stdout, 3)]
        assert [t["queues"][0]["scheduled"] for t in ticks] == [1, 1, 1]
        assert ticks[0]["time"] < ticks[1]["time"] < ticks[2]["time"]
        live.send_signal(signal.SIGINT)
        assert live.wait(20) == 0
        assert b"Traceback" not in live.stderr.read()
    finally:
        live.kill()
        live.wait()


def test_interval_redraws_in_place_on_a_terminal(redis_server):
    enqueue_later(redis_server.url, "a")
    controller, terminal = pty.openpty()
    argv = [sys.executable, "-c", ENTRY, "info", "-i", "0.2", "--url", redis_server.url]
    live = subprocess.Popen(
        argv, cwd=ROOT, stdout=terminal, stderr=subprocess.PIPE, preexec_fn=default_sigint
    )
    os.close(terminal)
    seen = b""

    def two_draws():
        nonlocal seen
        if select.select([controller], [], [], 0.1)[0]:
            seen += os.read(controller, 65536)
        return seen.count(b"\x1b[H") >= 2

    try:
        wait_for(two_draws, 20, message="two redraws")
        assert b"Ctrl+C ends" in seen and b"a " in seen
        live.send_signal(signal.SIGINT)
        assert live.wait(20) == 0
        assert b"Traceback" not in live.stderr.read()
    finally:
        live.kill()
        live.wait()
        os.close(controller)


def test_a_paused_queue_and_the_limits_of_a_queue_show_in_text_and_json(redis_server, start_worker):
    """A paused queue's jobs wait while a worker serves it: info says it is paused (else it
    looks stuck), and shows each queue's caps; a plain queue's row keeps SPEC 7's shape."""
    url = redis_server.url
    held, capped, plain = (Queue(name, connection=url) for name in ("held", "capped", "plain"))
    held.pause()
    capped.set_limits(concurrency=2, rate="10/s")
    capped.set_group_limits(concurrency=1)
    waiting = held.enqueue("tests.worker.jobs:add", 1, 2)
    ran = [q.enqueue("tests.worker.jobs:add", 3, 4) for q in (capped, plain)]
    start_worker("threading", 2, url, "-q", "held,capped,plain")
    wait_for(lambda: all(j.status == "finished" for j in ran), 30, message="the others ran")
    assert waiting.status == "queued"
    shown = {q["name"]: q for q in info_json(url)["queues"]}
    assert shown["held"]["paused"] is True and shown["held"]["queued"] == 1
    assert "limits" not in shown["held"] and "paused" not in shown["capped"]
    caps = {"concurrency": 2, "rate": "10/s", "group_concurrency": 1}
    assert shown["capped"]["limits"] == caps
    assert list(shown["plain"]) == COUNTS
    text = in_process("info", "--url", url).stdout
    rows = {line.split()[0]: line for line in text.splitlines() if line}
    assert rows["queue"].split()[-1] == "settings"
    assert rows["held"].endswith("  paused"), rows
    assert rows["capped"].endswith("  concurrency 2, rate 10/s, group concurrency 1"), rows
    assert rows["plain"].endswith("  -") and "rqconc resume QUEUE" in rows["paused:"]
    assert rqconc("resume", "held", "--url", url).returncode == 0
    wait_for(lambda: waiting.status == "finished", 30, message="the resumed queue's job ran")
    assert "paused" not in info_json(url, "held")["queues"][0]
