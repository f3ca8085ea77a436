"""SPEC 9 in a real headless Chromium (from the OS packages) against a real dashboard, a
private Redis and real workers: no console error on any page, a queue's counts and a
worker's children shown, requeue by a click, the live feed without a reload, and job text
that looks like markup shown as text and never run."""

import time

from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

from rqconc import Queue
from tests.dashboard.processes import console_errors, wait_page
from tests.support.worker_process import wait_for

PAGES = {
    "/": "#queues",
    "/workers": ".worker",
    "/failed": "h1",
    "/scheduled": "h1",
    "/events": "#feed",
}
XSS = [
    "<script>window.__xss = 'script'</script>",
    "<img src=x onerror=\"window.__xss = 'img'\">",
    '"><svg onload="window.__xss = \'svg\'">',
]


def _settled(read):
    """`read()`, again while the page swaps an element under it: the pages redraw as they
    update themselves, so an element found may be replaced before it is read (a CI run)."""
    for attempt in range(10):
        try:
            return read()
        except StaleElementReferenceException:
            if attempt == 9:
                raise
    raise AssertionError("unreachable")


def _text(driver, css):
    return _settled(lambda: " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, css)))


def _count(driver, queue, status):
    return _text(driver, f'tr[data-queue="{queue}"] [data-count="{status}"]')


def test_every_page_loads_without_console_errors_and_shows_counts_and_children(
    browser, board, redis_server, start_worker
):
    q = Queue("mail", connection=redis_server.url)
    start_worker("threading", 3, redis_server.url, "-q", "mail")
    running = [q.enqueue("tests.dashboard.jobs:nap", 60) for _ in range(2)]
    later = Queue("later", connection=redis_server.url)  # no worker listens: they wait
    waiting = [later.enqueue("tests.dashboard.jobs:add", i, 1) for i in range(4)]
    wait_for(lambda: all(j.status == "started" for j in running), 30, message="2 jobs running")
    q.enqueue_in(3600, "tests.dashboard.jobs:add", 5, 5)
    for path, css in PAGES.items():
        browser.get(board.base + path)
        wait_page(browser, css)
        assert console_errors(browser) == [], path
    browser.get(board.base + "/")
    wait_for(lambda: _count(browser, "mail", "started") == "2", 20, message="2 started shown")
    assert _count(browser, "mail", "scheduled") == "1"
    assert _count(browser, "later", "queued") == str(len(waiting))
    browser.execute_script("window.__same_page = true")
    later.enqueue_many([("tests.dashboard.jobs:add", (i, 2)) for i in range(3)])
    wait_for(lambda: _count(browser, "later", "queued") == "7", 20, message="7 queued shown")
    assert browser.execute_script("return window.__same_page") is True  # no reload
    browser.get(board.base + "/workers")
    wait_page(browser, '.child[data-state="busy"] a')
    busy = '.child[data-state="busy"] a'
    shown = _settled(lambda: {a.text for a in browser.find_elements(By.CSS_SELECTOR, busy)})
    assert {j.id for j in running} <= shown
    assert len(browser.find_elements(By.CSS_SELECTOR, '.child[data-state="idle"]')) == 1
    # A child links to its job's page.
    _settled(lambda: browser.find_elements(By.CSS_SELECTOR, busy)[0].click())
    wait_page(browser, "#job-args")
    assert "tests.dashboard.jobs:nap" in browser.find_element(By.CSS_SELECTOR, "dl.facts").text
    assert console_errors(browser) == []


def test_a_click_on_requeue_brings_a_failed_job_back(
    browser, board, redis_server, start_worker, tmp_path
):
    q = Queue("default", connection=redis_server.url)
    start_worker("threading", 2, redis_server.url)
    job = q.enqueue("tests.dashboard.jobs:fail_once", str(tmp_path / "ran-once"))
    wait_for(lambda: job.id in q.failed, 30, message="the job among the dead letters")
    browser.get(board.base + "/failed?queue=default")
    row = wait_page(browser, f'tr[data-job-id="{job.id}"]')
    assert "first run fails on purpose" in row.text
    row.find_element(By.CSS_SELECTOR, "button.requeue").click()
    # Back in its queue, and run again by the worker:
    wait_for(lambda: job.status == "finished", 30, message="the requeued job finished")
    assert job.return_value == "second run ok" and job.attempts == 1
    assert job.id not in q.failed
    wait_for(
        lambda: not browser.find_elements(By.CSS_SELECTOR, f'tr[data-job-id="{job.id}"]'),
        20,
        message="the requeued job gone from the failed list",
    )
    assert console_errors(browser) == []
    # SPEC 17: the worker's totals (one run failed, one finished) and the queue's functions.
    browser.get(board.base + "/workers")
    wait_for(
        lambda: (
            _text(browser, '[data-total="finished"]') == "1"
            and _text(browser, '[data-total="failed"]') == "1"
        ),
        20,
        message="the worker's totals shown",
    )
    browser.get(board.base + "/queues/default")
    row = '#functions tr[data-func="tests.dashboard.jobs:fail_once"]'
    wait_page(browser, row)
    assert _text(browser, f'{row} [data-count="finished"]') == "1"
    assert _text(browser, f'{row} [data-count="failed"]') == "1"  # failed for good, once
    assert console_errors(browser) == []


def test_a_new_job_appears_in_the_live_feed_without_a_reload(browser, board, redis_server):
    browser.get(board.base + "/events")
    wait_page(browser, "#feed")
    browser.execute_script("window.__same_page = true")
    job = Queue("default", connection=redis_server.url).enqueue("tests.dashboard.jobs:add", 1, 2)
    enqueued = time.monotonic()
    wait_page(browser, f'#feed tr[data-job-id="{job.id}"][data-event="queued"]', timeout=20)
    shown_after = time.monotonic() - enqueued
    assert browser.execute_script("return window.__same_page") is True
    assert shown_after < 5, f"shown {shown_after:.2f} s after the enqueue (SPEC: within 2 s)"
    assert console_errors(browser) == []


def test_job_text_that_looks_like_markup_is_shown_as_text_and_never_runs(
    browser, board, redis_server, start_worker
):
    q = Queue("default", connection=redis_server.url)
    start_worker("threading", 1, redis_server.url)
    jobs = [q.enqueue("tests.dashboard.jobs:fail_with", text) for text in XSS]
    wait_for(lambda: all(j.id in q.failed for j in jobs), 30, message="the jobs failed")
    pages = ["/", "/failed?queue=default", "/events"] + [f"/jobs/{j.id}" for j in jobs]
    for path in pages:
        browser.get(board.base + path)
        wait_page(browser, "#page h1 + *")
        wait_for(lambda: "Loading" not in _text(browser, "#page"), 20, message=path)
        if path.startswith("/jobs/"):
            shown = _text(browser, "#job-traceback")  # again if the page redrew it meanwhile
            assert any(text in shown for text in XSS), path  # the text itself, literally
        if path.startswith("/failed"):
            tracebacks = browser.execute_script(
                "return [...document.querySelectorAll('pre.traceback')]"
                ".map(e => e.textContent).join('')"
            )
            assert all(text in tracebacks for text in XSS)
        assert browser.execute_script("return window.__xss") is None, path
        injected = "#page script, #page img, #page td svg, #page pre *"
        assert not browser.find_elements(By.CSS_SELECTOR, injected), path
        assert console_errors(browser) == [], path


def test_the_failed_link_shows_dead_letters_of_a_queue_that_is_not_default(
    browser, board, redis_server, start_worker, tmp_path
):
    q = Queue("mail", connection=redis_server.url)
    start_worker("threading", 1, redis_server.url, "-q", "mail")
    job = q.enqueue("tests.dashboard.jobs:fail_once", str(tmp_path / "ran-once"))
    wait_for(lambda: job.id in q.failed, 30, message="the job among mail's dead letters")
    browser.get(board.base + "/")
    wait_page(browser, "#queues")
    browser.find_element(By.CSS_SELECTOR, '[data-nav="failed"]').click()
    row = wait_page(browser, f'tr[data-job-id="{job.id}"][data-queue="mail"]')
    assert "first run fails on purpose" in row.text
    chosen = _text(browser, "#queue option:checked")
    assert chosen == "every queue", chosen
    assert "mail (1)" in _text(browser, "#queue")
    _settled(
        lambda: browser.find_element(
            By.CSS_SELECTOR, f'tr[data-job-id="{job.id}"] button.requeue'
        ).click()
    )
    wait_for(lambda: job.status == "finished", 30, message="the requeued job finished")
    assert job.id not in q.failed
    assert console_errors(browser) == []


def test_the_queues_page_shows_a_paused_queue_and_the_limits_of_a_queue(
    browser, board, redis_server, start_worker
):
    held, capped = (Queue(n, connection=redis_server.url) for n in ("held", "capped"))
    held.pause()
    capped.set_limits(concurrency=2, rate="10/s")
    capped.set_group_limits(concurrency=1)
    waiting = held.enqueue("tests.dashboard.jobs:add", 1, 2)
    ran = capped.enqueue("tests.dashboard.jobs:add", 1, 2)
    start_worker("threading", 1, redis_server.url, "-q", "held,capped")
    wait_for(lambda: ran.status == "finished", 30, message="the capped queue's job ran")
    browser.get(board.base + "/")
    wait_page(browser, 'tr[data-queue="held"][data-paused="true"] .badge.paused')
    assert "no worker takes them" in _text(browser, "#paused-note")
    assert _count(browser, "held", "queued") == "1" and waiting.status == "queued"
    limits = _text(browser, 'tr[data-queue="capped"] .limits')
    assert limits == "concurrency 2 · rate 10/s · per group: concurrency 1", limits
    assert not browser.find_elements(By.CSS_SELECTOR, 'tr[data-queue="capped"] .badge.paused')
    held.resume()  # shown without a reload, and the job runs
    wait_for(lambda: not _text(browser, "tr[data-queue=held] .badge"), 20, message="resumed")
    wait_for(lambda: waiting.status == "finished", 30, message="the resumed queue's job ran")
    assert console_errors(browser) == []


def test_an_unknown_job_says_there_is_no_such_job(browser, board):
    browser.get(board.base + "/jobs/no-such-id")
    shown = wait_page(browser, "#no-such-job")
    assert shown.text.startswith("No such job")
    assert "Loading" not in _text(browser, "#page") and "no-such-id" in _text(browser, "h1")
    assert not browser.find_element(By.CSS_SELECTOR, "#banner").is_displayed()
    errors = console_errors(browser)  # the browser's own line for the API's 404, only
    assert all("404" in line and "/api/jobs/no-such-id" in line for line in errors), errors


def test_progress_is_shown_rounded_and_its_event_badge_is_no_progress_bar(
    browser, board, redis_server, start_worker
):
    q = Queue("default", connection=redis_server.url)
    browser.get(board.base + "/events")
    wait_page(browser, "#feed")
    start_worker("threading", 1, redis_server.url)
    job = q.enqueue("tests.dashboard.jobs:a_third")  # set_progress(1 / 3, "a third")
    row = wait_page(browser, f'#feed tr[data-job-id="{job.id}"][data-event="progress"]')
    badge = row.find_element(By.CSS_SELECTOR, ".badge.progress")
    style = browser.execute_script(
        "const s = getComputedStyle(arguments[0]); return [s.width, s.height, s.overflow]", badge
    )
    assert style[0] != "240px" and style[1] != "8px" and style[2] != "hidden", style
    detail = _settled(lambda: row.text)
    assert "progress=33.3 %" in detail and "0.333" not in detail, detail
    browser.get(board.base + f"/jobs/{job.id}")
    assert wait_page(browser, "#job-progress").text == "33.3 %"
    assert browser.find_elements(By.CSS_SELECTOR, ".progress-bar > span[data-fraction]")
    assert "a third" in _text(browser, "dl.facts")
    assert console_errors(browser) == []


def test_the_job_page_says_when_its_older_events_were_trimmed(
    browser, board, redis_server, start_worker
):
    q = Queue("default", connection=redis_server.url)
    # The worker's maintenance trims the stream past its cap (no step trims it: SPEC 18).
    start_worker("threading", 1, redis_server.url, "--events-max", "10000")
    job = q.enqueue("tests.dashboard.jobs:add", 1, 2)
    wait_for(lambda: job.status == "finished", 30, message="the job finished")
    browser.get(board.base + f"/jobs/{job.id}")
    wait_page(browser, '#job-events tr[data-event="finished"]')
    assert "trimmed" not in _text(browser, "#page .note")
    filler = Queue("filler", connection=redis_server.url)  # past the stream's cap
    for _ in range(6):
        filler.enqueue_many([("tests.dashboard.jobs:add", (i, 1)) for i in range(2000)])
    wait_for(lambda: "trimmed" in _text(browser, "#page .note"), 20, message="the note")
    assert not browser.find_elements(By.CSS_SELECTOR, "#job-events tbody tr")
    assert console_errors(browser) == []
