import pytest

from tests.dashboard.processes import Dashboard, start_browser


@pytest.fixture
def dashboard(redis_server, tmp_path):
    """start(*args, env=None): a real `rqconc dashboard` on the test's private Redis."""
    started = []

    def start(*args, env=None, auth=None):
        board = Dashboard(redis_server.url, tmp_path, *args, env=env)
        started.append(board)
        return board.wait_ready(auth)

    yield start
    for board in started:
        board.close()


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium per test module (it takes a second or two to start)."""
    driver = start_browser()
    yield driver
    driver.quit()


@pytest.fixture
def browser(chromium, dashboard):
    """The module's Chromium on a blank page with an empty console log, left on a blank page
    before the test's dashboard stops (its polling must not outlive the test into the next)."""
    chromium.get("about:blank")
    chromium.get_log("browser")
    yield chromium
    chromium.get("about:blank")
    chromium.get_log("browser")
