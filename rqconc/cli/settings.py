"""Worker settings from files: `-c/--config FILE.py` (a Python module of upper-case names, as
RQ's `-c`) and the `[tool.rqconc]` table of the working directory's `pyproject.toml`.

Precedence: flag > environment (`RQCONC_*`) > config file > pyproject > default. The files
fill click's `default_map`, which click consults only after the command line and the
environment, so the eager `--config` option's callback (run before any other option is read)
is the one place that layers them. A setting's name is its option's long name (`QUEUES`,
`MAX_JOBS_PER_CHILD`; `redis-url` / `max_jobs_per_child` in pyproject), plus `REDIS_URL` for
`--url` as RQ names it.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import click
from click.core import ParameterSource

from rqconc.connection import embedded
from rqconc.connection.clients import redact

if sys.version_info >= (3, 11):
    import tomllib
else:  # the `tomli` backport, required on 3.9 and 3.10 (setup.cfg)
    import tomli as tomllib

ALIASES = {"redis_url": "url"}
# Options that say how to read the settings rather than being one.
NOT_SETTINGS = ("config", "print_config")
SOURCES_KEY = "rqconc.setting_sources"
PYPROJECT = "pyproject.toml [tool.rqconc]"
EMBEDDED_SOURCE = "default: the embedded server, started on first use"


def setting_name(param: click.Parameter) -> str:
    """`--max-jobs-per-child` -> `max_jobs_per_child`; an argument by its own name."""
    long_names = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
    name = long_names[0][2:] if long_names else (param.name or "")
    return name.replace("-", "_")


def settable(command: click.Command) -> Dict[str, click.Parameter]:
    """Setting name -> parameter, for every parameter a file may set."""
    found = {}
    for param in command.params:
        if getattr(param, "hidden", False) or param.name in NOT_SETTINGS:
            continue
        found[setting_name(param)] = param
    return found


def read_config_file(path: str) -> Dict[str, Any]:
    """The upper-case names a config module defines (running it, as RQ does)."""
    if not Path(path).is_file():
        raise click.UsageError(f"config file {path} does not exist")
    try:
        namespace = runpy.run_path(path)
    except Exception as exc:  # the user's module: whatever it raised, one line
        raise click.UsageError(f"config file {path} failed: {type(exc).__name__}: {exc}") from None
    return {k: v for k, v in namespace.items() if k.isupper() and not k.startswith("_")}


def read_pyproject(directory: Path) -> Dict[str, Any]:
    """The `[tool.rqconc]` table of `directory`'s pyproject.toml ({} without one)."""
    path = directory / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise click.UsageError(f"cannot read {path}: {exc}") from None
    table = document.get("tool", {}).get("rqconc", {})
    if not isinstance(table, dict):
        raise click.UsageError(f"{path}: [tool.rqconc] must be a table")
    return table


def _shaped(param: click.Parameter, value: Any) -> Any:
    """A file's value in the shape the option takes: one name or a list for a repeatable
    option, a list for the comma list of queues."""
    if param.multiple:
        return (value,) if isinstance(value, str) else value
    if param.name in ("queues", "namespace") and isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return value


def checked(
    ctx: click.Context, settings: Dict[str, Any], origin: str
) -> Dict[str, Tuple[str, Any]]:
    """Parameter name -> (setting as written, value) for the settings of one file; an
    unknown name or a bad value is misuse, named with its file."""
    params = settable(ctx.command)
    result = {}
    for key, value in settings.items():
        name = key.lower().replace("-", "_")
        param = params.get(ALIASES.get(name, name))
        if param is None or param.name is None:
            known = ", ".join(sorted(params))
            raise click.UsageError(f"{origin}: unknown setting {key!r} (known: {known})")
        value = _shaped(param, value)
        try:
            param.type_cast_value(ctx, value)
        except click.BadParameter as exc:
            raise click.UsageError(f"{origin}: {key}: {exc.message}") from None
        result[param.name] = (key, value)
    return result


def load_settings(ctx: click.Context, param: click.Parameter, path: Optional[str]) -> Optional[str]:
    """The eager `--config` callback: the files' settings become the defaults of the options
    read after it."""
    layers = [(PYPROJECT, read_pyproject(Path.cwd()))]
    if path:
        layers.append((f"config file {path}", read_config_file(path)))
    defaults = dict(ctx.default_map or {})
    sources = {}
    for origin, settings in layers:  # the later layer wins
        for name, (_, value) in checked(ctx, settings, origin).items():
            defaults[name] = value
            sources[name] = origin
    ctx.default_map = defaults
    ctx.meta[SOURCES_KEY] = sources
    return path


def _source(ctx: click.Context, param: click.Parameter) -> str:
    name = param.name or ""
    source = ctx.get_parameter_source(name)
    if source is ParameterSource.COMMANDLINE:
        return "flag" if isinstance(param, click.Option) else "argument"
    if source is ParameterSource.ENVIRONMENT:
        return f"environment {param.envvar}"
    if source is ParameterSource.DEFAULT_MAP:
        return str(ctx.meta.get(SOURCES_KEY, {}).get(name, "default_map"))
    return "default"


def _shown(name: str, value: Any) -> str:
    if name == "url" and isinstance(value, str):
        value = redact(value)
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, default=str)


def _effective_url(value: Any, source: str) -> Tuple[str, str]:
    """The URL the worker will connect to and its layer: with no rqconc layer setting --url,
    connect() falls back to REDIS_URL, then to the embedded server (clients.resolve_url),
    whose URL is known without starting it."""
    if value is not None:
        return value, source
    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"], "environment REDIS_URL"
    return embedded.url(), EMBEDDED_SOURCE


def describe(ctx: click.Context) -> str:
    """`--print-config`: each setting, its value and where it came from; passwords in URLs
    redacted. Lines read as TOML for a `[tool.rqconc]` table (unset ones commented out)."""
    lines = []
    for name, param in settable(ctx.command).items():
        value = ctx.params.get(param.name or "")
        source = _source(ctx, param)
        if name == "url":
            value, source = _effective_url(value, source)
        if value is None:
            lines.append(f"# {name}: not set ({source})")
        else:
            lines.append(f"{name} = {_shown(name, value)}  # {source}")
    return "\n".join(lines)
