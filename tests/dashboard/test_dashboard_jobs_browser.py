"""SPEC 17 in the real headless Chromium against a real dashboard on real Redis: a queue's
page lists its jobs by status, filters them by function, opens a job by id, and deletes
the selected jobs only once the confirmation is accepted."""

from selenium.webdriver.common.by import By

from rqconc import Queue
from tests.dashboard.processes import console_errors, wait_page
from tests.dashboard.test_dashboard_browser import _settled, _text
from tests.support.worker_process import wait_for

ADD, NAP = "tests.dashboard.jobs:add", "tests.dashboard.jobs:nap"


def _shown(browser):
    # Read in one script, at one moment of the page: element by element, a redraw between
    # the find and the reads made them stale ten times running on a slow machine (a run).
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#jobs tbody tr'))"
        ".map(r => r.getAttribute('data-job-id'))"
    )


def test_the_queue_page_lists_filters_and_opens_jobs(browser, board, redis_server):
    q = Queue("mail", connection=redis_server.url)
    jobs = q.enqueue_many([(NAP if n % 4 == 0 else ADD, (n, 1)) for n in range(60)])
    later = q.enqueue_in(600, ADD, 1, 2)
    browser.get(board.base + "/")
    # Found and clicked again if the overview redraws its table in between (a loaded run).
    _settled(lambda: wait_page(browser, 'tr[data-queue="mail"] a.queue-link').click())
    wait_page(browser, "#jobs")
    wait_for(lambda: _shown(browser) == [j.id for j in jobs[:50]], 20, message="first 50 shown")
    assert "60 queued" in _text(browser, "#jobs-total")
    _settled(lambda: browser.find_element(By.ID, "older").click())
    wait_for(lambda: _shown(browser) == [j.id for j in jobs[50:]], 20, message="the next page")
    _settled(lambda: browser.find_element(By.CSS_SELECTOR, '[data-status="scheduled"]').click())
    wait_for(lambda: _shown(browser) == [later.id], 20, message="the scheduled job")
    browser.get(board.base + "/queues/mail")
    field = wait_page(browser, "#func")
    field.send_keys("nap\n")
    naps = [j.id for j in jobs[::4]]
    wait_for(lambda: _shown(browser) == naps, 20, message="only the naps")
    assert "searched jobs 1–60 of 60" in _text(browser, "#search-note")
    box = wait_page(browser, "#open-id")
    box.send_keys(jobs[3].id + "\n")
    wait_page(browser, "#job-args")
    assert ADD in browser.find_element(By.CSS_SELECTOR, "dl.facts").text
    assert console_errors(browser) == []


def test_selected_jobs_are_deleted_only_once_the_confirmation_is_accepted(
    browser, board, redis_server
):
    q = Queue("mail", connection=redis_server.url)
    jobs = [q.enqueue(ADD, n, 1) for n in range(4)]
    browser.get(board.base + "/queues/mail?status=queued")
    wait_page(browser, "#jobs")
    for job in jobs[:2]:
        box = f'tr[data-job-id="{job.id}"] input.select'
        _settled(lambda box=box: browser.find_element(By.CSS_SELECTOR, box).click())
    _settled(lambda: browser.find_element(By.ID, "delete-selected").click())
    dialog = browser.switch_to.alert
    assert dialog.text == "Delete the selected jobs?"
    dialog.dismiss()  # no: nothing deleted
    assert q.job_ids == [j.id for j in jobs]
    _settled(lambda: browser.find_element(By.ID, "delete-selected").click())
    browser.switch_to.alert.accept()
    wait_for(lambda: q.job_ids == [j.id for j in jobs[2:]], 20, message="two deleted")
    wait_for(lambda: _shown(browser) == [j.id for j in jobs[2:]], 20, message="the list redrawn")
    assert console_errors(browser) == []
