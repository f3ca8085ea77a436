"""Django's task framework on rqconc (SPEC 16, docs/django.md): `RqconcBackend` for the
`TASKS` setting, on `django.tasks` (Django 6.0+) or the `django-tasks` backport."""

from rqconc.contrib.django.backend import RqconcBackend

__all__ = ["RqconcBackend"]
