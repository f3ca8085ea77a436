"""The Elasticsearch shipper of docs/events-to-elasticsearch.md, run as written against a
local HTTP endpoint that speaks the `_bulk` API (not a real cluster)."""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rqconc.queue.queue import Queue
from tests.support.worker_process import ROOT

DOC = ROOT / "docs" / "events-to-elasticsearch.md"


def shipper_code():
    (block,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    namespace = {}
    exec(compile(block, str(DOC), "exec"), namespace)
    return namespace


class Bulk(BaseHTTPRequestHandler):
    """POST /_bulk: ndjson action/document pairs; documents kept by (index, id)."""

    documents = {}

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        lines = [json.loads(line) for line in body.splitlines() if line]
        ok = self.path == "/_bulk" and self.headers["Content-Type"] == "application/x-ndjson"
        items = []
        for action, doc in zip(lines[::2], lines[1::2]):
            target = action["index"]
            Bulk.documents[(target["_index"], target["_id"])] = doc
            items.append({"index": {"_id": target["_id"], "status": 201}})
        reply = json.dumps({"took": 1, "errors": not ok, "items": items}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def elasticsearch():
    Bulk.documents = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Bulk)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_documented_shipper_posts_full_detail_events_to_the_bulk_api(
    redis_url, start_worker, elasticsearch
):
    ship = shipper_code()["ship_to_elasticsearch"]
    q = Queue("shipped", connection=redis_url, event_detail="full")
    ok = q.enqueue("tests.queue.parity_tasks:tagged", "x", meta={"log_tag": "order-9"})
    bad = q.enqueue("tests.queue.parity_tasks:tagged", "bad", retry=None)
    start_worker("threading", 1, redis_url, "-q", "shipped")
    ok.get(timeout=15)

    def docs_of(job):
        return [d for d in Bulk.documents.values() if d["job_id"] == job.id]

    def done():
        events = [d["event"] for d in docs_of(ok) + docs_of(bad)]
        return "finished" in events and "failed" in events

    shipped = ship(redis_url, elasticsearch, stop=done)
    assert shipped == len(Bulk.documents) >= 6
    assert all(index == "rqconc-events" for index, _ in Bulk.documents)
    finished = next(d for d in docs_of(ok) if d["event"] == "finished")
    assert finished["result"] == {"got": "x"} and finished["args"] == ["x"]
    assert finished["log_tag"] == "order-9" and finished["@timestamp"] == finished["ts"]
    failed = next(d for d in docs_of(bad) if d["event"] == "failed")
    assert failed["exc_message"] == "no good: bad" and failed["host"]

    # A second shipper of the group resumes after the acknowledged ones: nothing again.
    before = dict(Bulk.documents)
    calls = []
    assert ship(redis_url, elasticsearch, stop=lambda: calls.append(1) or len(calls) > 2) == 0
    assert Bulk.documents == before
