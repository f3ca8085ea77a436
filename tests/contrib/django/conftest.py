"""A real Django project (tests/contrib/django/site: settings, an app with a model, its
migration) set up in this test process on the backport (the project's virtualenv has
Django 5.2 and django-tasks), with a SQLite file and a Redis of its own."""

import os
import sys
import time
from pathlib import Path

import pytest

from tests.support.redis_server import RedisServer

SITE = Path(__file__).resolve().parent / "site"
NAMESPACE = "djangotests"


@pytest.fixture(scope="session")
def django_site(redis_binary, tmp_path_factory):
    """Django set up once in this process (its settings cannot change after), the database
    migrated; yields the Redis URL the backend and the workers use."""
    server = RedisServer(redis_binary).start()
    directory = tmp_path_factory.mktemp("django")
    os.environ["RQCONC_DJANGO_DB"] = str(directory / "db.sqlite3")
    os.environ["RQCONC_DJANGO_REDIS"] = server.url
    sys.path.insert(0, str(SITE))
    # Settings are read by django.setup(); leaving DJANGO_SETTINGS_MODULE (which workers
    # read as --django) or Django's TZ in the environment would reach other tests' workers.
    saved_tz = os.environ.get("TZ")
    os.environ["DJANGO_SETTINGS_MODULE"] = "djsite.settings"
    try:
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
    finally:
        del os.environ["DJANGO_SETTINGS_MODULE"]
        if saved_tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved_tz
        time.tzset()
    yield server.url
    server.close()


def worker_options(*queues: str) -> tuple:
    """What a worker of the test project is started with (besides backend and size)."""
    return (
        *("--namespace", NAMESPACE, "--django", "djsite.settings", "--path", str(SITE)),
        *("-q", ",".join(queues or ("default",))),
    )
