"""The docs cannot rot: their commands are run or, where a test cannot run them, parsed.

Convention: a ```bash (or ```python) block whose previous non-blank line is
`<!-- test: run -->` is runnable. Each runnable block runs as one `bash -euo pipefail`
script (or one `python -c` program), in order, against a
private Redis per document (`REDIS_URL`), with `RQCONC_HOME` in a temporary directory and the
project's virtualenv first on PATH. After `<!-- test: run in background -->` a block starts
and keeps running (a worker, say) while the document's later blocks run; it is killed at
the end. After `<!-- test: file PATH -->` a block is a file the reader creates: it is
written to PATH in a temporary directory, which is then the working directory of the
document's blocks (else they run in the checkout). The README's block after
`<!-- test: install -->` is its install section: `.ci/wheel_smoke.py` (run by `make test`)
runs it as written in a fresh virtualenv, too slow for this file. Every `rqconc ...` and
`python main.py ...` line of every bash block (runnable or not) must parse with the real
command line: options, choices, ranges and arguments, without running it; every python
block must compile.
"""

import ast
import importlib.util
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

import click
import pytest

from rqconc.cli.app import cli
from rqconc.cli.worker_checks import check_size
from rqconc.cli.worker_command import main_py
from tests.support.worker_process import ROOT

MARKER = "<!-- test: run -->"
BACKGROUND = "<!-- test: run in background -->"
FILE = re.compile(r"^<!-- test: file (\S+) -->$")
SHELLS = {"bash", "sh", "shell", "console"}
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# Values for variables that parse-only lines use (runnable blocks get the real environment).
PLACEHOLDERS = {
    "POD_NAME": "worker-0",
    "REDIS_URL": "redis://localhost:6379/0",
    "HOSTNAME": "worker-0",
}


@dataclass
class Block:
    doc: Path
    line: int
    runnable: bool
    text: str
    language: str = "bash"
    background: bool = False
    file: Optional[str] = None  # a file the reader writes, not a command

    def __repr__(self) -> str:
        return f"{self.doc.name}:{self.line}"


def blocks(doc: Path) -> List[Block]:
    found, lines = [], doc.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = re.match(r"^```(\w*)\s*$", lines[index])
        if not opening:
            index += 1
            continue
        language = opening.group(1)
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        previous = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
        runnable = previous in (MARKER, BACKGROUND)
        file = FILE.match(previous)
        if runnable and language not in SHELLS | {"python"}:
            raise AssertionError(f"{doc.name}:{index + 1}: {previous} before a {language!r} block")
        if language in SHELLS | {"python"} or runnable or file:
            text = "\n".join(lines[index + 1 : end])
            found.append(
                Block(
                    doc,
                    index + 1,
                    runnable,
                    text,
                    language,
                    background=previous == BACKGROUND,
                    file=file.group(1) if file else None,
                )
            )
        index = end + 1
    return found


ALL_BLOCKS = [block for doc in DOCS for block in blocks(doc)]
RUNNABLE_DOCS = sorted({block.doc for block in ALL_BLOCKS if block.runnable})


def command_lines(block: Block) -> List[List[str]]:
    """The `rqconc` and `python main.py` command lines of a block, as argument lists."""
    if block.language not in SHELLS or block.file:
        return []
    joined = re.sub(r"\\\n\s*", " ", block.text)
    commands = []
    for line in joined.splitlines():
        expanded = re.sub(
            r"\$\{?(\w+)\}?", lambda m: PLACEHOLDERS.get(m.group(1), m.group(0)), line
        )
        words = shlex.split(expanded, comments=True)
        words = [w for w in words if not re.match(r"^\d?>", w) and w != "&"]
        if words[:1] == ["rqconc"] or words[:2] in (
            ["python", "main.py"],
            [".venv/bin/python", "main.py"],
        ):
            if "$" in " ".join(words):
                # A shell variable: a runnable block runs it for real; elsewhere it must be
                # one of PLACEHOLDERS.
                assert block.runnable, f"{block}: unknown variable in {line!r}"
                continue
            commands.append(words)
    return commands


def parse(words: List[str]) -> None:
    """Parse a command line with the real click commands, down to the leaf command."""
    if words[0] == "rqconc":
        command, args, name = cli, words[1:], "rqconc"
    else:
        command, args, name = main_py, words[2:], "main.py"
    parent = None
    while isinstance(command, click.Group):  # our groups take no options of their own
        parent = click.Context(command, info_name=name, parent=parent)
        assert args, f"{' '.join(words)!r} names no subcommand"
        name, args = args[0], args[1:]
        command = command.get_command(parent, name)
        assert command is not None, f"{' '.join(words)!r}: no command {name!r}"
    ctx = command.make_context(name, list(args), parent=parent)
    if command.name in ("worker", "main.py"):
        check_size(ctx.params["backend"], ctx.params["size"])


def test_the_docs_mark_runnable_blocks_and_have_commands_to_parse():
    assert {doc.name for doc in RUNNABLE_DOCS} >= {
        "operations.md",
        "migrating-from-rq.md",
        "choosing-a-backend.md",
    }
    assert sum(len(command_lines(b)) for b in ALL_BLOCKS if not b.runnable) >= 5
    assert sum(len(command_lines(b)) for b in ALL_BLOCKS if b.runnable) >= 20
    # The README's first snippet and its embedding example run as printed.
    readme = [b for b in ALL_BLOCKS if b.doc.name == "README.md"]
    assert sum(b.runnable and b.language == "python" for b in readme) >= 2
    assert any(b.background for b in readme) and any(b.file for b in readme)


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=repr)
def test_every_command_in_the_docs_parses(block):
    for words in command_lines(block):
        try:
            parse(words)
        except (click.ClickException, click.exceptions.Exit) as exc:
            if isinstance(exc, click.exceptions.Exit) and exc.exit_code == 0:
                continue  # --help
            raise AssertionError(f"{block}: {' '.join(words)!r} does not parse: {exc}") from None


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.language == "python"], ids=repr)
def test_every_python_example_compiles(block):
    compile(block.text, repr(block), "exec")


def start(block: Block, cwd: Path, env: dict, output: Path) -> subprocess.Popen:
    argv = (
        [sys.executable, "-c"] if block.language == "python" else ["bash", "-euo", "pipefail", "-c"]
    )
    # Its own process group, so that nothing the block started can outlive it.
    with open(output, "w") as out:
        return subprocess.Popen(
            [*argv, block.text],
            cwd=cwd,
            env=env,
            text=True,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def end(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("doc", RUNNABLE_DOCS, ids=lambda d: d.name)
def test_runnable_blocks_run(doc, redis_server, tmp_path):
    env = dict(
        os.environ,
        REDIS_URL=redis_server.url,
        RQCONC_HOME=str(tmp_path / "home"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    env.pop("PYTHONPATH", None)  # the reader's shell: the blocks find only what they made
    files = [b for b in blocks(doc) if b.file]
    cwd = tmp_path / "work" if files else ROOT
    for block in files:
        (cwd / block.file).parent.mkdir(parents=True, exist_ok=True)
        (cwd / block.file).write_text(block.text + "\n")
    background: List[subprocess.Popen] = []
    shown: List[Path] = []
    try:
        for number, block in enumerate(b for b in blocks(doc) if b.runnable):
            output = tmp_path / f"block{number}.out"
            process = start(block, cwd, env, output)
            if block.background:
                background.append(process)
                shown.append(output)
                continue
            try:
                process.wait(timeout=120)
            finally:
                end(process)
            assert process.returncode == 0, (
                f"{block} exited {process.returncode}\n{block.text}\n--- output\n"
                f"{output.read_text()[-3000:]}"
                + "".join(f"\n--- {o.name} (background)\n{o.read_text()[-3000:]}" for o in shown)
            )
    finally:
        for process in background:
            end(process)


INSTALL = "<!-- test: install -->"
# The wheel smoke step is a script (.ci/ is no package): the function that finds its block.
_SMOKE = ROOT / ".ci" / "wheel_smoke.py"


def test_the_readme_install_block_is_the_one_the_wheel_smoke_step_runs():
    spec = importlib.util.spec_from_file_location("wheel_smoke", _SMOKE)
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    readme = ROOT / "README.md"
    lines = readme.read_text().splitlines()
    marked = [b for b in blocks(readme) if lines[b.line - 3 : b.line - 1][-1:] == [INSTALL]]
    assert smoke.INSTALL_MARKER == INSTALL and len(marked) == 1, marked
    assert smoke.install_block(readme.read_text()) == marked[0].text
    assert "wheel-smoke" in (ROOT / "Makefile").read_text().split("\ntest:")[1].splitlines()[0]


# What pip would install from PyPI (rqconc, the first argument after any options): rqconc is
# not published there, so an instruction naming it bare would install nothing, or whatever
# someone registers under the name later.
BARE_NAME = re.compile(
    r"""pip install(?:\s+-[-\w=]+)*\s+['"]?rqconc(\[[\w,]*\])?(?!\s*@)['"]?(?=[\s'"`),]|$)"""
)


@pytest.mark.parametrize("path", [*DOCS, *sorted((ROOT / "rqconc").rglob("*.py"))], ids=str)
def test_no_install_instruction_names_rqconc_on_pypi(path):
    found = [m.group(0) for m in BARE_NAME.finditer(path.read_text())]
    assert not found, f"{path.relative_to(ROOT)}: {found}"


# A function named "myapp.<module>:<function>" (or RQ's dotted form) in an example.
EXAMPLE_FUNCTION = re.compile(r"\bmyapp((?:\.\w+)+)[:.](\w+)\b")


def defined_by_files(doc: Path) -> dict:
    """{module: names it defines} of the page's `<!-- test: file myapp/... -->` blocks."""
    found = {}
    for block in blocks(doc):
        if block.file and block.file.endswith(".py"):
            module = block.file[: -len(".py")].replace("/", ".")
            tree = ast.parse(block.text)
            found[module] = {
                node.name
                for node in tree.body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            }
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_example_function_is_defined_on_its_page(doc):
    """Issue 32, item 5: an example that enqueues `myapp.etl:extract` or registers
    `myapp.probes:ping` must be runnable as printed: each python block, and each runnable
    one, names only functions the page defines in a file block."""
    defined = defined_by_files(doc)
    missing = []
    for block in blocks(doc):
        if block.file or not (block.language == "python" or block.runnable):
            continue
        for match in EXAMPLE_FUNCTION.finditer(block.text):
            module, name = "myapp" + match.group(1), match.group(2)
            if name not in defined.get(module, ()):
                missing.append(f"{block}: {module}:{name}")
    assert not missing, "examples name functions their page does not define:\n" + "\n".join(missing)
