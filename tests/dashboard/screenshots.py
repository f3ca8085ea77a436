"""Screenshots of every dashboard page for README and docs/img/, from a real scene: a private
Redis, real workers running real jobs (some failing, a flow, scheduled ones, a cron entry),
the real dashboard and headless Chromium.

    .venv/bin/python -m tests.dashboard.screenshots [OUT_DIR]    # default docs/img
"""

import sys
import tempfile
from pathlib import Path
from typing import Tuple

from rqconc import Queue
from tests.dashboard.processes import Dashboard, start_browser, wait_page
from tests.support.redis_server import RedisServer, system_redis_binary
from tests.support.worker_process import ROOT, WorkerProcesses, wait_for

SHOTS = [
    ("queues", "/", "#queues"),
    ("workers", "/workers", ".child[data-state=busy] a"),
    ("failed", "/failed?queue=default", "#failed"),
    ("scheduled", "/scheduled?queue=reports", "#crons"),
    ("events", "/events", "#feed tr"),
    ("queue", "/queues/digest", "#jobs"),
]


def scene(url: str, workers: WorkerProcesses) -> Tuple[str, str]:
    """Jobs in every state; returns the ids of a flow's second stage and of a job that
    logged, for the job pages."""
    default, mail = Queue("default", connection=url), Queue("mail", connection=url)
    reports = Queue("reports", connection=url)
    workers("threading", 4, url, "-q", "default,mail", "--name", "web-1.threading")
    workers("forking", 2, url, "-q", "reports", "--name", "batch-1.forking")
    done = default.enqueue_many([("tests.dashboard.jobs:add", (i, i)) for i in range(300)])
    first = default.enqueue("tests.dashboard.jobs:first_stage", 41)
    for text in ("card declined", "<img src=x onerror=alert(1)> is only text here"):
        default.enqueue("tests.dashboard.jobs:fail_with", text)
    [mail.enqueue("tests.dashboard.jobs:nap", 600) for _ in range(2)]
    mail.enqueue_many([("tests.dashboard.jobs:add", (i, 1)) for i in range(40)], priority=0)
    reports.enqueue("tests.dashboard.jobs:nap", 600)
    for delay in (300, 900, 3600):
        reports.enqueue_in(delay, "tests.dashboard.jobs:add", delay, 0)
    reports.cron("0 6 * * *", "tests.dashboard.jobs:add", 1, 2, id="daily-report")
    logged = default.enqueue("tests.dashboard.jobs:import_invoices", 6)
    digest = Queue("digest", connection=url)  # no worker listens: its jobs wait, listed
    digest.enqueue_many([("tests.dashboard.jobs:add", (i, 1)) for i in range(60)])
    digest.enqueue_many([("tests.dashboard.jobs:nap", (i,)) for i in range(1, 4)], priority=5)
    wait_for(lambda: all(j.status == "finished" for j in done), 60, message="300 jobs done")
    wait_for(lambda: first.next_id and default.fetch_job(first.next_id).status == "finished", 30)
    wait_for(lambda: len(default.failed) == 2, 30, message="two dead letters")
    wait_for(lambda: logged.status == "finished", 30, message="the job that logs")
    return first.next_id, logged.id


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "docs" / "img")
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="rqconc-shots-"))
    server = RedisServer(system_redis_binary()).start()
    workers = WorkerProcesses(scratch)
    board = browser = None
    try:
        job_id, logged_id = scene(server.url, workers)
        board = Dashboard(server.url, scratch).wait_ready()
        browser = start_browser(1280, 820)
        jobs = [
            ("job", f"/jobs/{job_id}", "#flow"),
            ("job-logs", f"/jobs/{logged_id}", "#job-logs"),
        ]
        for name, path, css in SHOTS + jobs:
            browser.get(board.base + path)
            wait_page(browser, css)
            wait_for(lambda: browser.find_element("id", "updated").text, 10)
            if name == "failed":  # a traceback shown (an open one also pauses the refresh)
                browser.execute_script("document.querySelector('#failed details').open = true")
            height = browser.execute_script("return document.body.scrollHeight")
            tallest = 1200 if name == "job-logs" else 960  # down to the log's last line
            browser.set_window_size(1280, max(720, min(tallest, height + 20)))
            browser.save_screenshot(str(out / f"dashboard-{name}.png"))
            print(out / f"dashboard-{name}.png")
    finally:
        if browser:
            browser.quit()
        if board:
            board.close()
        workers.close()
        server.close()


if __name__ == "__main__":
    main()
