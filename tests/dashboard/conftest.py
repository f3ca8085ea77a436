"""One Redis and one dashboard process per test module (a dashboard takes seconds to start
on a busy machine), flushed before each test; tests that need their own command line (auth,
host) start one with `dashboard(...)`."""

import subprocess

import pytest

from tests.dashboard.processes import Dashboard, ensure_chromium, start_browser
from tests.support.redis_server import RedisServer


@pytest.fixture(scope="module")
def module_redis(redis_binary):
    server = RedisServer(redis_binary).start()
    yield server
    server.close()


@pytest.fixture
def redis_server(module_redis):
    """The module's Redis, empty for this test."""
    module_redis.client().flushall()
    return module_redis


@pytest.fixture(scope="module")
def board(module_redis, tmp_path_factory):
    """A real `rqconc dashboard` on the module's Redis."""
    started = Dashboard(module_redis.url, tmp_path_factory.mktemp("dashboard"))
    yield started.wait_ready()
    started.close()


@pytest.fixture
def dashboard(redis_server, tmp_path):
    """start(*args, env=None, auth=None): a dashboard of the test's own command line."""
    started = []

    def start(*args, env=None, auth=None):
        board = Dashboard(redis_server.url, tmp_path, *args, env=env)
        started.append(board)
        return board.wait_ready(auth)

    yield start
    for board in started:
        board.close()


CHROMIUM_PROBLEM = []


def pytest_collection_modifyitems(items):
    """Chromium from the OS packages, installed before any test runs when a browser test is
    collected: apt may take minutes, longer than one test's timeout."""
    if any("browser" in item.fixturenames for item in items):
        try:
            ensure_chromium()
        except (AssertionError, OSError, subprocess.SubprocessError) as exc:
            CHROMIUM_PROBLEM.append(str(exc))  # the browser tests fail with it, never skip


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium per test module (it takes a second or two to start)."""
    assert not CHROMIUM_PROBLEM, f"Chromium could not be installed: {CHROMIUM_PROBLEM[0]}"
    driver = start_browser()
    yield driver
    driver.quit()


@pytest.fixture
def browser(chromium, board):
    """The module's Chromium on a blank page with an empty console log, left on a blank page
    after the test (its page's polling must not outlive the test into the next)."""
    chromium.get("about:blank")
    chromium.get_log("browser")
    yield chromium
    chromium.get("about:blank")
    chromium.get_log("browser")
