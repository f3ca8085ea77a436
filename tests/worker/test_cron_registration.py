"""Issue 15, item 10: registering a cron shows its next 3 fire times, on the returned entry
and in an INFO line, so that a six-field expression (seconds read last) surprises no one."""

import logging
import re
import time

from rqconc import Queue

JOBS = "tests.worker.jobs"


def test_registration_returns_and_logs_the_next_three_fire_times(redis_server, caplog):
    q = Queue(connection=redis_server.url)
    with caplog.at_level(logging.INFO, logger="rqconc.queue.schedule.cron"):
        entry = q.cron("*/2 * * * * *", f"{JOBS}:add", 1, 2, id="even-minutes")
    now = time.time()
    runs = entry.next_runs
    assert len(runs) == 3 and runs == sorted(runs) and runs[0] > now - 1
    # Seconds last: every second of the even minutes, not every second second.
    for run in runs:
        assert time.gmtime(run).tm_min % 2 == 0
    line = [r.getMessage() for r in caplog.records if "even-minutes" in r.getMessage()][0]
    assert "registered on queue default" in line and "*/2 * * * * *" in line, line
    shown = re.findall(r"\d{4}-\d\d-\d\d \d\d:(\d\d):\d\d UTC", line)
    assert len(shown) == 3 and all(int(minute) % 2 == 0 for minute in shown), line
