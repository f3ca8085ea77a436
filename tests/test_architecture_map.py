"""docs/architecture.md stays in step with the code: its package map names every module of
rqconc/ and its step table every Lua step (issue 30: the map had lost 15 modules and the
table 5 of the 26 scripts, and nothing noticed)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Set

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "rqconc"
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _map_blocks() -> Dict[str, List[str]]:
    """The package map's lines, per top-level package (`rqconc/<name>/` heads a block)."""
    section = DOC[DOC.index("## Package map") :]
    fenced = section[section.index("```") + 3 :]
    fenced = fenced[: fenced.index("```")]
    blocks: Dict[str, List[str]] = {}
    current = ""
    for line in fenced.splitlines():
        head = re.match(r"rqconc/(\w+)/", line)
        if head:
            current = head.group(1)
            blocks.setdefault(current, [])
            line = line[head.end() :]
        if current:
            blocks[current].append(line)
    return blocks


def _listed_in(lines: List[str]) -> Set[str]:
    """Module paths a block names in its left column (a line indented by two spaces, up to
    the gap before its description): a word `name`, or `sub/` followed on its line by
    `name` (`steps/ core batch` names steps/core and steps/batch), or `sub/name` itself."""
    listed: Set[str] = set()
    for line in lines:
        if not re.match(r"  \S", line):
            continue  # a package's own line or a description carried over
        column = re.split(r"\s{2,}", line.strip())[0]
        prefix = ""
        for word in column.split():
            if word.endswith("/"):
                prefix = word
                listed.add(word.rstrip("/"))
            else:
                listed.add(prefix + word)
                listed.add(word)
    return listed


def test_the_package_map_names_every_module():
    blocks = _map_blocks()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if len(parts) == 1:  # rqconc/__init__, errors, gevent_first...: the map's first lines
            if parts[0] not in ("__init__",) and parts[0] not in DOC:
                missing.append(str(path.relative_to(ROOT)))
            continue
        top, rest = parts[0], [p for p in parts[1:] if p != "__init__"]
        if not rest:
            continue  # a package's own __init__: the package's line names it
        name = "/".join(rest)
        if top not in blocks or name not in _listed_in(blocks[top]):
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, "modules the package map of docs/architecture.md omits:\n" + "\n".join(
        missing
    )


def test_the_step_table_names_every_lua_step():
    section = DOC[DOC.index("## Lua steps") :]
    named = set(re.findall(r"^\| `(\w+)`", section, flags=re.M))
    scripts = {p.stem for p in (PACKAGE / "store" / "lua").glob("*.lua")}
    assert scripts, "no Lua step found: the test looks in the wrong place"
    assert not scripts - named, f"steps the table omits: {sorted(scripts - named)}"
    assert not named - scripts - {"include"}, f"the table names no such step: {named - scripts}"


def test_the_map_test_reads_the_map():
    # Guards the test itself: an empty parse would make the first test pass vacuously.
    blocks = _map_blocks()
    for package in ("engine", "connection", "store", "queue", "worker", "cli", "dashboard"):
        assert package in blocks, package
    assert "steps/core" in _listed_in(blocks["store"])
