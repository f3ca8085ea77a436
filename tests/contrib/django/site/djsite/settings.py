"""A small Django project for the backend's tests: its database and Redis come from the
environment the test sets (RQCONC_DJANGO_DB, RQCONC_DJANGO_REDIS)."""

import importlib.util
import os

SECRET_KEY = "rqconc-tests-only"
DEBUG = True
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
USE_TZ = True
TIME_ZONE = "UTC"
ROOT_URLCONF = "djsite.urls"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"

INSTALLED_APPS = ["django.contrib.contenttypes", "notes"]
if importlib.util.find_spec("django.tasks") is None:  # Django before 6.0: the backport
    INSTALLED_APPS.append("django_tasks")

DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["RQCONC_DJANGO_DB"]}
}

TASKS = {
    "default": {
        "BACKEND": "rqconc.contrib.django.RqconcBackend",
        "QUEUES": ["default", "ordered"],
        "OPTIONS": {
            "url": os.environ["RQCONC_DJANGO_REDIS"],
            "namespace": "djangotests",
            "timeout": 30,
        },
    }
}
