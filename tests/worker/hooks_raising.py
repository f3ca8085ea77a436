"""A `--hooks` module whose every hook raises: logged, never failing the job or worker."""


def on_worker_start(worker):
    raise RuntimeError("start hook boom")


def before_job(job):
    raise RuntimeError("before hook boom")


def after_job(job, result):
    raise RuntimeError("after hook boom")


def on_failure(job, exc_info):
    raise RuntimeError("failure hook boom")
