"""Print a step's Lua exactly as Redis receives it: `python -m rqconc.store.build.print_lua
NAME` (`make lua NAME=complete`), numbered, so the line of a Redis error (`user_script:123:`
on Redis 7, `f_<sha>:123:` on 6.2) can be read; `--raw` prints the bare text. `--library`
prints the step's Functions library instead (`make lua NAME=complete LIBRARY=1`), which
Redis 7 runs and whose errors name its lines as `user_function:123:`.

The text is the one scripts.Script loads and calls by SHA, or store/functions.py loads as
the library (tests hold them equal)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from typing import List, Optional

from rqconc.store.build import build, build_library, library_prefix, read


def numbered(source: str) -> str:
    """`source` with each line prefixed by its number, as Redis counts them (from 1)."""
    width = len(str(source.count("\n") + 1))
    return "\n".join(f"{i:>{width}}  {line}" for i, line in enumerate(source.split("\n"), 1))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rqconc.store.build.print_lua", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("name", nargs="?", help="a step: the name of a file of rqconc/store/lua/")
    parser.add_argument("--raw", action="store_true", help="the bare text, without numbers")
    parser.add_argument(
        "--library", action="store_true", help="the step's Functions library (Redis 7)"
    )
    args = parser.parse_args(argv)
    try:
        read(f"{args.name}.lua")
    except FileNotFoundError:
        print(f"no Lua step named {args.name!r} in rqconc/store/lua/", file=sys.stderr)
        return 2
    if args.library:
        return _print(f"library {library_prefix()}_{args.name}", build_library(args.name), args.raw)
    return _print(args.name, build(args.name), args.raw)


def _print(what: str, source: str, raw: bool) -> int:
    if raw:
        sys.stdout.write(source)
        return 0
    sha = hashlib.sha1(source.encode()).hexdigest()
    lines = source.count("\n") + 1
    print(f"-- {what}: {lines} lines, SHA1 {sha} (as Redis receives it)")
    print(numbered(source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
