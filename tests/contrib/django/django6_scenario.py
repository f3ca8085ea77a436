"""The core scenario on Django 6.1, run by test_django6.py inside .venv-django6:

    python django6_scenario.py REDIS_URL WORK_DIR

A view enqueues a task that writes a row, a failing task and a task taking context; a real
`--django` worker runs them; the results, read back, are printed as one JSON line."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT, SITE = HERE.parents[2], HERE / "site"


def setup(redis_url: str, work_dir: Path) -> None:
    os.environ.update(
        RQCONC_DJANGO_DB=str(work_dir / "db.sqlite3"),
        RQCONC_DJANGO_REDIS=redis_url,
        DJANGO_SETTINGS_MODULE="djsite.settings",
    )
    sys.path.insert(0, str(SITE))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def start_worker(redis_url: str, work_dir: Path) -> subprocess.Popen:
    argv = [sys.executable, str(ROOT / "main.py"), "forking", "2", "--url", redis_url]
    argv += ["--namespace", "djangotests", "--django", "djsite.settings", "--path", str(SITE)]
    log = open(work_dir / "worker.log", "wb")
    return subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=log)


def finished(task, result_id: str, deadline: float):
    while time.monotonic() < deadline:
        result = task.get_result(result_id)
        if result.is_finished:
            return result
        time.sleep(0.02)
    raise AssertionError(f"task result {result_id} did not finish")


def main() -> None:
    redis_url, work_dir = sys.argv[1], Path(sys.argv[2])
    setup(redis_url, work_dir)
    import django
    from django.test import Client
    from notes.models import Note
    from notes.tasks import fail, report_context, write_note

    from rqconc.contrib.django import compat

    enqueued = Client().get("/notes/enqueue", {"text": "on django 6"}).json()
    failing, context = fail.enqueue("boom"), report_context.enqueue("ctx")
    worker = start_worker(redis_url, work_dir)
    try:
        deadline = time.monotonic() + 30
        written = finished(write_note, enqueued["id"], deadline)
        failed = finished(fail, failing.id, deadline)
        with_context = finished(report_context, context.id, deadline)
    finally:
        worker.terminate()
        worker.wait(15)
    summary = {
        "django": list(django.VERSION[:2]),
        "framework": compat.BaseTaskBackend.__module__,
        "status": written.status,
        "value": written.return_value,
        "row": Note.objects.get(id=written.return_value["id"]).text,
        "failed": failed.status,
        "error": failed.errors[0].exception_class_path,
        "context": with_context.return_value,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
