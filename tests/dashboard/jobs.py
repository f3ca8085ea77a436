"""Jobs the dashboard tests' workers run (allowed by the workers' `--allow tests`)."""

import os
import time


def nap(seconds):
    time.sleep(seconds)
    return seconds


def add(a, b):
    return a + b


def fail_once(marker):
    """Fails the first time (ValueError is not retried by default), succeeds after."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise ValueError(f"first run fails on purpose; {marker} now exists")
    return "second run ok"


def fail_with(text):
    """Fails for good with attacker-controlled text in its message and traceback."""
    raise RuntimeError(text)


def first_stage(n):
    """A two-stage flow: this stage hands on to `add(n, 1)`."""
    from rqconc import Next

    return Next("default", "tests.dashboard.jobs:add", n, 1, result="handed on")


def a_third():
    """Reports a third done: 1/3, a float with many digits (shown as 33.3 %)."""
    from rqconc import get_current_job

    get_current_job().set_progress(1 / 3, "a third")
    return "done"


def import_invoices(count):
    """Keeps log lines with the job (SPEC 17), by job.log() and the `rqconc.job` logger."""
    import logging

    from rqconc import get_current_job

    job, records = get_current_job(), logging.getLogger("rqconc.job")
    job.log(f"fetching {count} invoices from the billing API")
    for n in range(1, count + 1):
        records.info("invoice INV-%04d imported (%d of %d)", 1200 + n, n, count)
    records.warning("invoice INV-%04d has no customer e-mail: skipped the receipt", 1200 + count)
    job.log(f"done: {count} imported, 1 receipt skipped")
    return count
