"""A real `rqconc dashboard` subprocess and a real headless Chromium to look at it.

Chromium comes from the OS packages (`apt-get install chromium chromium-driver`), installed
here on first use when missing: a pip package that downloads its own browser cannot work on
these machines. When it cannot be installed the tests fail with the reason, never skip.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from tests.support.redis_server import free_port
from tests.support.waiting import wait_for
from tests.support.worker_process import ROOT, default_sigint

CHROMIUM_PACKAGES = ("chromium", "chromium-driver")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class Dashboard:
    """`python -m rqconc dashboard --url URL --port P [args]` as a subprocess."""

    def __init__(self, url: str, log_dir: Path, *args: str, env: Optional[Dict] = None) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"dashboard-{self.port}.log"
        self._log = open(self.log_path, "wb")
        argv = [sys.executable, "-m", "rqconc", "dashboard", "--url", url]
        self.process = subprocess.Popen(
            [*argv, "--port", str(self.port), *args],
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, **(env or {})),
            preexec_fn=default_sigint,
        )

    def wait_ready(self, auth: Optional[Tuple[str, str]] = None) -> Dashboard:
        def answers() -> bool:
            assert self.process.poll() is None, f"dashboard exited:\n{self.output()}"
            try:
                return self.request("/static/style.css", auth=auth)[0] == 200
            except OSError:
                return False

        wait_for(answers, 30, 0.1, message=f"the dashboard on {self.base}")
        return self

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def request(
        self,
        path: str,
        method: str = "GET",
        body: Optional[dict] = None,
        headers: Optional[Dict[str, str]] = None,
        auth: Optional[Tuple[str, str]] = None,
    ) -> Tuple[int, bytes]:
        """(status, body) of one real HTTP request; error statuses are returned too."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data, headers or {}, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if auth is not None:
            token = f"{auth[0]}:{auth[1]}".encode()
            request.add_header("Authorization", "Basic " + _b64(token))
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def get_json(self, path: str, **kwargs) -> dict:
        status, body = self.request(path, **kwargs)
        assert status == 200, (path, status, body)
        return json.loads(body)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._log.close()


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def ensure_chromium() -> None:
    """Install Chromium and its driver from the OS packages when missing (as root, the way
    the machines here run); AssertionError naming the reason when that is impossible."""
    if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
        return
    # pytest-xdist's workers all get here at once: one installs, the others wait for it.
    with open(os.path.join(tempfile.gettempdir(), "rqconc-chromium.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
            _apt_install()


def _apt_install() -> None:
    apt = shutil.which("apt-get")
    assert apt, "Chromium is missing and there is no apt-get to install chromium, chromium-driver"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    steps = [[apt, "update", "-q"], [apt, "install", "-y", "-q", *CHROMIUM_PACKAGES]]
    for step in steps:
        done = subprocess.run(step, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{' '.join(step)} failed: {done.stderr.strip()[-2000:]}"
    assert os.path.exists(CHROMEDRIVER), f"apt installed no {CHROMEDRIVER}"


def start_browser(width: int = 1280, height: int = 900):
    """A headless Chromium driven through the system chromedriver (selenium never downloads
    a browser when given the driver's path)."""
    ensure_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def console_errors(driver) -> List[str]:
    """Console messages of level SEVERE since the last call (reading the log empties it)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def wait_page(driver, css: str, timeout: float = 20):
    """The first element matching `css` once the page's script has rendered it."""

    def found():
        elements = driver.find_elements(By.CSS_SELECTOR, css)
        return elements[0] if elements else None

    return wait_for(found, timeout, 0.05, message=f"{css} on {driver.current_url}")
