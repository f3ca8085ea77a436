"""The worker command: `python main.py BACKEND SIZE` and `rqconc worker -b BACKEND -n SIZE`.

Every worker option may also come from an environment variable: `RQCONC_` and the option's
long name (`--queues` → `RQCONC_QUEUES`, `--max-jobs-per-child` → `RQCONC_MAX_JOBS_PER_CHILD`);
an option on the command line wins. Below the environment come the settings of a config file
(`-c FILE.py`) and of pyproject.toml's `[tool.rqconc]` table (settings.py)."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import click

from rqconc import gevent_first
from rqconc.cli.common import namespace_option
from rqconc.cli.settings import describe, load_settings
from rqconc.cli.worker_checks import check_before_start, split_queues
from rqconc.cli.worker_tuning import env_option, event_retention, timing_options
from rqconc.demo import run_demo
from rqconc.engine.backends import pool_class
from rqconc.engine.fake_source import FakeSource
from rqconc.engine.launcher import launch, launched_place
from rqconc.engine.source import WorkSource
from rqconc.worker import logs
from rqconc.worker.hooks import Hooks
from rqconc.worker.redis_supervisor import Supervisor


def worker_options(command: Callable) -> Callable:
    """The options both worker commands accept (SPEC section 1)."""
    options = [
        env_option(
            "-c",
            "--config",
            default=None,
            is_eager=True,  # read before every other option: its settings are their defaults
            callback=load_settings,
            metavar="FILE.py",
            help="Python module of upper-case settings (QUEUES, SIZE, REDIS_URL, ...), below "
            "flags and RQCONC_* variables, above pyproject.toml's [tool.rqconc].",
        ),
        click.option(
            "--print-config",
            is_flag=True,
            help="Print the resulting settings and where each came from, then exit.",
        ),
        env_option(
            "-q",
            "--queues",
            default="default",
            show_default=True,
            help="Comma list of queues to listen on; `all` (or '*'): every queue of the "
            "namespace, including those that appear later.",
        ),
        env_option(
            "--url", default=None, help="Redis URL (default: REDIS_URL, else the embedded server)."
        ),
        namespace_option(many=True),
        env_option(
            "--burst", is_flag=True, help="Exit 0 once every queue is empty and every child idle."
        ),
        env_option(
            "--strategy",
            type=click.Choice(["ordered", "round-robin"]),
            default="ordered",
            show_default=True,
        ),
        env_option(
            "--shutdown-timeout",
            type=click.FloatRange(min=0),
            default=None,
            help="Seconds a warm shutdown may last before it turns cold.",
        ),
        env_option(
            "--slots",
            type=int,
            default=1,
            show_default=True,
            help="Jobs each child runs at once, in threads (forking and multiprocessing).",
        ),
        env_option(
            "--processes",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Workers this command runs side by side, each with SIZE children: "
            "processes x slots for gevent, threading and asyncio (docs/backends.md).",
        ),
        env_option("--max-jobs-per-child", type=click.IntRange(min=1), default=None),
        env_option(
            "--max-memory-per-child", type=click.FloatRange(min=1), default=None, metavar="MB"
        ),
        env_option(
            "--allow",
            multiple=True,
            help="Module prefix whose functions may run (repeatable; '*' allows all).",
        ),
        env_option(
            "--allow-pickle",
            is_flag=True,
            help="Run jobs of pickle queues "
            "(unpickling runs code chosen by whoever can write to Redis).",
        ),
        env_option(
            "--hooks",
            multiple=True,
            metavar="MODULE",
            help="Module whose hook functions run around the worker and its jobs "
            "(repeatable; docs/hooks.md).",
        ),
        env_option("--name", default=None, help="The worker's name in the registry."),
        env_option(
            "--path",
            "paths",
            multiple=True,
            default=(".",),
            show_default=True,
            type=click.Path(file_okay=False, exists=True),
            help="Directory put first on sys.path, for the supervisor and every child "
            "(repeatable), so that jobs of your own modules import.",
        ),
        env_option(
            "--preload",
            multiple=True,
            help="Module each child imports at start ('module:function' also calls the function).",
        ),
        env_option(
            "--django",
            default=None,
            metavar="SETTINGS",
            # DJANGO_SETTINGS_MODULE too: a shell set up for the project needs no flag.
            envvar=["RQCONC_DJANGO", "DJANGO_SETTINGS_MODULE"],
            help="Run the tasks of Django's task framework (docs/django.md): each child "
            "runs django.setup() with these settings before its first job.",
        ),
        env_option(
            "--lease-seconds",
            type=click.FloatRange(min=0.5),
            default=15,
            show_default=True,
            help="How long a job's lease lasts unrenewed: a "
            "vanished worker's jobs are back in their queue after it.",
        ),
        *timing_options(),
        env_option(
            "--source",
            "source_kind",
            type=click.Choice(["redis", "fake"]),
            default="redis",
            # The engine's tests only: a user has no use for it, so --help does not show it.
            hidden=True,
            envvar=None,
        ),
        env_option("--fake-spool", default=None, hidden=True, envvar=None),
        env_option("--fake-log", default=None, hidden=True, envvar=None),
        env_option(
            "--demo",
            type=click.IntRange(min=1),
            default=None,
            metavar="N",
            help="Fill the queue with N demo jobs, show progress, exit.",
        ),
        env_option(
            "--log-level",
            default=None,
            type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
            help="[default: INFO; WARNING with --demo, whose live display shows every job]",
        ),
        env_option(
            "--log-format",
            type=click.Choice(logs.FORMATS),
            default="text",
            show_default=True,
            help="'json': one object per line (ts, level, "
            "logger, message and the record's fields).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def build_source(options: Dict[str, Any]) -> Optional[WorkSource]:
    """The fake source when asked for; None lets the Supervisor build the Redis one."""
    if options["source_kind"] != "fake":
        return None
    return FakeSource(spool=options["fake_spool"], log=options["fake_log"])


# Options handed to the Supervisor under their own names.
SAME_NAMED = (
    "worker_ttl",
    "take_wait",
    "webhook_timeout",
    "callback_timeout",
    "slots",
    "wait_replicas",
    "wait_timeout",
)


def run_worker(backend: str, size: int, options: Dict[str, Any]) -> int:
    """Build the supervisor that the options describe and run it in the foreground."""
    if options["print_config"]:
        click.echo(describe(click.get_current_context()))
        return 0
    add_to_sys_path(options["paths"])
    use_django(options)
    level = options["log_level"] or ("WARNING" if options["demo"] else "INFO")
    logs.configure(level, options["log_format"], sys.stderr)
    check_before_start(backend, options)
    place = launched_place()
    if options["processes"] > 1 and place is None:
        return launch_workers(options["processes"])
    if place is not None and options["name"]:  # one name per worker in the registry
        options["name"] = f"{options['name']}-{place.partition('/')[0]}"
    if options["demo"]:
        return run_demo(backend, size, options)
    supervisor = Supervisor(
        backend,
        size,
        split_queues(options["queues"]),
        connection=options["url"],
        namespace=options["namespace"],
        strategy=options["strategy"],
        allow=options["allow"],
        allow_pickle=options["allow_pickle"],
        lease_seconds=options["lease_seconds"],
        source=build_source(options),
        name=options["name"],
        shutdown_timeout=options["shutdown_timeout"],
        max_jobs_per_child=options["max_jobs_per_child"],
        max_memory_per_child=options["max_memory_per_child"],
        preload=child_preload(backend, options["preload"]),
        burst=options["burst"],
        cli=True,
        hooks=load_hooks(options["hooks"]),
        events=event_retention(options),
        **{name: options[name] for name in SAME_NAMED},
    )
    return supervisor.run()


# The contrib module a --django worker's children preload and run tasks through: named, not
# imported (nothing imports rqconc.contrib; it needs Django installed).
DJANGO_RUNNER = "rqconc.contrib.django.worker"


def use_django(options: Dict[str, Any]) -> None:
    """--django SETTINGS: the settings for every child (the environment is inherited, forked
    or spawned), django.setup() before each child's first job, and the runner allowed."""
    if not options["django"]:
        return
    if importlib.util.find_spec("django") is None:
        raise click.UsageError(
            "--django needs Django: install rqconc's django extra (docs/django.md)"
        )
    try:
        found = importlib.util.find_spec(options["django"])
    except ImportError:  # its package is missing
        found = None
    if found is None:
        raise click.UsageError(
            f"--django: no settings module {options['django']!r} here (see --path)"
        )
    os.environ["DJANGO_SETTINGS_MODULE"] = options["django"]
    options["preload"] = (DJANGO_RUNNER + ":setup", *options["preload"])
    options["allow"] = (*options["allow"], DJANGO_RUNNER)


def launch_workers(count: int) -> int:
    """--processes N: N workers of this very command line (engine/launcher.py)."""
    if gevent_first.worker_command is None:
        raise click.UsageError(
            "--processes starts workers from a command line (main.py or rqconc worker)"
        )
    return launch(gevent_first.worker_command, count)


def child_preload(backend: str, modules: Sequence[str]) -> Tuple[str, ...]:
    """The modules children import first; children that start fresh (not forked) also set
    up logging first, since they inherit no logging set-up."""
    preload = tuple(modules)
    if pool_class(backend).children_start_fresh:
        preload = (logs.CHILD_SETUP, *preload)
    return preload


def load_hooks(modules: Sequence[str]) -> Hooks:
    """The `--hooks` modules; a module that is missing or has no hook: one line, exit 2."""
    try:
        return Hooks(modules)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def add_to_sys_path(paths: Sequence[str]) -> None:
    """Put `paths` first on sys.path, as `rq worker` and `dramatiq` do: an installed console
    script has its own directory there, not the one the user runs it from. Absolute, so
    that a child that changes directory still finds them; forked children, threads and
    greenlets share this sys.path, and multiprocessing's spawn hands it to each child."""
    for path in reversed(paths):
        absolute = os.path.abspath(path)
        if absolute in sys.path:
            sys.path.remove(absolute)
        sys.path.insert(0, absolute)
