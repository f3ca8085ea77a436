"""SPEC 17 in the real headless Chromium against a real dashboard on real Redis: each action
of a queue's page (requeue, cancel and promote the selected jobs; empty and delete the
queue, each only once its confirmation is accepted; pause and resume; set and clear limits)
changes Redis as it says, and a job's page shows the lines the job logged. One dashboard
and one browser serve the module (tests/dashboard/conftest.py)."""

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from rqconc import Job, JobStatus, Queue
from rqconc.worker.redis_source import RedisSource
from tests.dashboard.processes import console_errors, wait_page
from tests.dashboard.test_dashboard_browser import _settled, _text
from tests.queue.helpers import take_and_run
from tests.support.worker_process import wait_for

ADD, FAIL = "tests.dashboard.jobs:add", "tests.dashboard.jobs:fail_with"


def _open(browser, board, path, css="#queue-jobs"):
    browser.get(board.base + path)
    wait_page(browser, css)


def _click(browser, element_id):
    _settled(lambda: browser.find_element(By.ID, element_id).click())


def _select(browser, jobs):
    for job in jobs:
        box = f'tr[data-job-id="{job.id}"] input.select'
        wait_page(browser, box)
        _settled(lambda box=box: browser.find_element(By.CSS_SELECTOR, box).click())


def _confirm(browser, question, accept=True):
    dialog = wait_for(lambda: _alert(browser), 10, message=f"the confirmation {question!r}")
    assert dialog.text == question
    dialog.accept() if accept else dialog.dismiss()


def _alert(browser):
    try:
        return browser.switch_to.alert
    except Exception:  # no alert yet (NoAlertPresentException)
        return None


def test_requeue_selected_puts_dead_letters_back_in_the_queue(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    bad = [q.enqueue(FAIL, f"bad {n}") for n in range(3)]
    source = RedisSource(redis_server.url, queues=["mail"], allow=["tests"])
    for _ in bad:
        take_and_run(source)
    assert len(q.failed) == 3
    _open(browser, board, "/queues/mail?status=failed")
    _select(browser, bad[:2])
    _click(browser, "requeue-selected")
    wait_for(lambda: q.job_ids == [j.id for j in bad[:2]], 20, message="two requeued")
    assert q.failed.job_ids == [bad[2].id] and console_errors(browser) == []


def test_cancel_selected_asks_first_then_cancels(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    jobs = [q.enqueue(ADD, n, 1) for n in range(3)]
    _open(browser, board, "/queues/mail?status=queued")
    _select(browser, jobs[:2])
    _click(browser, "cancel-selected")
    _confirm(browser, "Cancel the selected jobs?", accept=False)
    assert q.job_ids == [j.id for j in jobs]
    _click(browser, "cancel-selected")
    _confirm(browser, "Cancel the selected jobs?")
    wait_for(lambda: q.job_ids == [jobs[2].id], 20, message="two canceled")
    assert [j.status for j in jobs[:2]] == [JobStatus.CANCELED] * 2


def test_promote_runs_a_scheduled_job_now(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    later, kept = q.enqueue_in(600, ADD, 1, 2), q.enqueue_in(900, ADD, 2, 2)
    _open(browser, board, "/queues/mail?status=scheduled")
    _select(browser, [later])
    _click(browser, "promote-selected")
    wait_for(lambda: q.job_ids == [later.id], 20, message="promoted into the queue")
    assert later.status is JobStatus.QUEUED and kept.status is JobStatus.SCHEDULED


def test_empty_deletes_the_waiting_jobs_once_confirmed(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    jobs = [q.enqueue(ADD, n, 1) for n in range(3)]
    later = q.enqueue_in(600, ADD, 9, 9)
    _open(browser, board, "/queues/mail")
    _click(browser, "empty-queue")
    _confirm(browser, "Delete every waiting job of mail?", accept=False)
    assert q.job_ids == [j.id for j in jobs]
    _click(browser, "empty-queue")
    _confirm(browser, "Delete every waiting job of mail?")
    wait_for(lambda: q.job_ids == [], 20, message="the queue emptied")
    assert Job.fetch_many([j.id for j in jobs], redis_server.url) == [None] * 3
    assert later.status is JobStatus.SCHEDULED  # not waiting: kept


def test_delete_queue_removes_it_and_its_jobs_once_confirmed(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    jobs = [q.enqueue(ADD, n, 1) for n in range(2)] + [q.enqueue_in(600, ADD, 9, 9)]
    question = "Delete queue mail and every job of it that is not running?"
    _open(browser, board, "/queues/mail")
    _click(browser, "delete-queue")
    _confirm(browser, question, accept=False)
    assert len(q) == 2
    _click(browser, "delete-queue")
    _confirm(browser, question)
    # The queue leaves the set of queues after its last job is gone (queue/admin.py).
    wait_for(
        lambda: (
            Job.fetch_many([j.id for j in jobs], redis_server.url) == [None] * 3
            and not redis_server.client().sismember(q.keys.queues, "mail")
        ),
        20,
        message="queue mail and its jobs deleted",
    )


def test_a_click_held_across_a_redraw_still_reaches_its_button(browser, board, redis_server):
    """The page redraws every second; a redraw that changes nothing leaves its elements in
    place, so a click whose mouse-down and mouse-up straddle one still reaches the button (a
    replaced button loses it: the click goes to what both have in common, as a CI run under
    load lost a Resume)."""
    q = Queue("mail", connection=redis_server.url)
    q.enqueue(ADD, 1, 1)
    q.pause()
    _open(browser, board, "/queues/mail", "#resume-queue")
    button = browser.find_element(By.ID, "resume-queue")
    ActionChains(browser).click_and_hold(button).perform()
    # The queue page's own redraw, run to its end between the press and the release.
    browser.execute_async_script(
        "queuePage(document.getElementById('page')).then(arguments[arguments.length - 1])"
    )
    ActionChains(browser).release().perform()
    wait_for(lambda: not q.is_paused, 20, message="resumed by the held click")
    assert console_errors(browser) == []


def test_pause_asks_first_and_resume_undoes_it(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    q.enqueue(ADD, 1, 1)
    _open(browser, board, "/queues/mail", "#pause-queue")
    _click(browser, "pause-queue")
    _confirm(browser, "Stop workers taking jobs of mail?", accept=False)
    assert not q.is_paused
    _click(browser, "pause-queue")
    _confirm(browser, "Stop workers taking jobs of mail?")
    wait_for(lambda: q.is_paused, 20, message="paused")
    wait_page(browser, "#resume-queue")
    _click(browser, "resume-queue")
    wait_for(lambda: not q.is_paused, 20, message="resumed")
    wait_page(browser, "#pause-queue")


def test_limits_are_set_and_cleared_once_confirmed(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    q.enqueue(ADD, 1, 1)
    _open(browser, board, "/queues/mail", "#limits-form")
    browser.find_element(By.ID, "limit-concurrency").send_keys("3")
    browser.find_element(By.ID, "limit-rate").send_keys("10/s")
    _click(browser, "set-limits")
    _confirm(browser, "Replace this queue's limits with these?")
    wait_for(lambda: q.limits.concurrency == 3, 20, message="limits set")
    assert q.limits.caps() == {"concurrency": 3, "rate": "10/s"}
    wait_for(lambda: "concurrency 3" in _text(browser, "#queue-limits"), 20)
    _click(browser, "clear-limits")
    _confirm(browser, "Remove every limit of this queue?")
    wait_for(lambda: q.limits.caps() == {}, 20, message="limits cleared")
    assert console_errors(browser) == []


def test_a_jobs_page_shows_the_lines_it_logged(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    job = q.enqueue(ADD, 1, 1)
    for line in ("fetched 3 invoices", "<img src=x onerror=alert(1)> stays text"):
        job.log(line)
    _open(browser, board, f"/jobs/{job.id}", "#job-logs")
    shown = _text(browser, "#job-logs").splitlines()
    assert shown == job.logs() and shown[1].endswith("<img src=x onerror=alert(1)> stays text")
    assert console_errors(browser) == []
