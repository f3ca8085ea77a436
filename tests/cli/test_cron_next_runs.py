"""`rqconc cron list` shows the next three fire times (six fields read seconds last) and
never a "last enqueued" time in the future (issue 15, item 10)."""

import json
import time

from rqconc import Queue
from rqconc.store.keys import KeySpace
from tests.cli.test_commands import in_process
from tests.queue import tasks


def test_six_fields_read_seconds_last_and_no_future_last_tick(redis_server):
    queue = Queue("default", redis_server.url)
    queue.cron("*/2 * * * * *", tasks.add, 1, 2, id="even-minutes")
    # A tick planned ahead (enqueued with its due time) is recorded before it is due.
    ahead = int(time.time()) + 3600
    redis_server.client().hset(KeySpace("rqconc").cron_last, "even-minutes", ahead)
    result = in_process("cron", "list", "--json", "--url", redis_server.url)
    assert result.returncode == 0, result.stderr
    (entry,) = json.loads(result.stdout)
    assert entry["last_tick"] is None or entry["last_tick"] <= time.time()
    runs = entry["next_runs"]
    assert len(runs) == 3 and all(time.gmtime(run).tm_min % 2 == 0 for run in runs)
    text = in_process("cron", "list", "--url", redis_server.url).stdout
    assert time.strftime("%Y-%m-%dT%H:%M", time.gmtime(ahead)) not in text
