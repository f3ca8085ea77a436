"""The `rqconc` command line. Every failure a user can cause ends in one line and an exit code:
2 for misuse, 1 when Redis cannot be reached."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

import click
import redis

from rqconc import __version__, errors
from rqconc.cli.commands import CommandTable
from rqconc.worker.logs import redact_text


@click.group(cls=CommandTable, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="rqconc")
def cli() -> None:
    """rqconc: a Redis job queue whose worker supervises concurrent children."""


def _one_line(message: str) -> str:
    """A message that stays on one line whatever the user typed: line breaks and other
    unprintable characters (str.splitlines also breaks at \\x1c-\\x1e, \\x85, \\u2028) echoed
    from an argument are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message.strip())


def _fail(prog: str, message: str, code: int) -> None:
    click.echo(f"{prog}: error: {_one_line(message)}", err=True)
    sys.exit(code)


def invoke(command: click.Command, args: Optional[Sequence[str]], prog: str) -> None:
    try:
        code = command.main(args=args, prog_name=prog, standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(1)
    except click.MissingParameter as exc:
        # Click lays the choices of a missing argument out on lines of their own: one line.
        _fail(prog, " ".join(exc.format_message().split()), 2)
    except click.UsageError as exc:
        _fail(prog, exc.format_message(), 2)
    except click.ClickException as exc:
        _fail(prog, exc.format_message(), exc.exit_code)
    except errors.RQConcError as exc:  # ConnectionError among them: exit 1
        _fail(prog, str(exc), 1)
    except redis.exceptions.RedisError as exc:
        # A failure no command translated (an error reply, say): still one line, exit 1.
        _fail(prog, redact_text(f"Redis answered {type(exc).__name__}: {exc}"), 1)
    sys.exit(code or 0)


def main(args: Optional[Sequence[str]] = None) -> None:
    invoke(cli, args, "rqconc")
