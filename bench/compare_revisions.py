"""rqconc against an earlier revision of itself, in one run: did a change slow the hot path?

    .venv/bin/python bench/compare_revisions.py [--base REV] [--runs 5] [--results]

Checks REV out into a temporary git worktree and runs rqconc's no-op (forking 2) and
enqueue rows (single calls, batch) from `bench/run.py`, alternating between REV and the
working tree run by run, on one private Redis: both sides see the same machine load, so the
ratio of their medians is the figure to read (the absolute numbers move with the load).
Each side runs its own `bench.driver` from its own tree, with this virtualenv's packages.

The default base, 788155d, is the code before limits, unique keys, metrics counters and the
richer events (issues 17 and 19): SPEC 13 allows them at most 5% of the plain no-op job's
throughput, measured against it in the same run. `make bench` runs this with --results,
which writes the table into bench/RESULTS.md (between the markers below).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.run as runner  # noqa: E402
from bench.common import ROOT, PrivateRedis, replace_section, revision_tree  # noqa: E402
from bench.run import ENQ1, ENQB, NOOP, ROWS, Row, run_driver  # noqa: E402

COMPARED = [r for r in ROWS if r.system == "rqconc" and r.group in (NOOP, ENQ1, ENQB)]
# Rows an earlier revision cannot run (a queue with limits set, issue 19): head only.
HEAD_ONLY = [r for r in COMPARED if r.mode.endswith(":limits")]
COMPARED = [r for r in COMPARED if r not in HEAD_ONLY]
BEFORE_FLOW_AND_METRICS = "788155d"
BEGIN, END = "<!-- spec13-cost:begin -->", "<!-- spec13-cost:end -->"


def run_in(tree: Path, row: Row, url: str) -> float:
    """One run of `row` with `tree`'s own code (the driver starts from the tree's root, so
    `import rqconc` finds that tree's package before the editable install)."""
    previous = runner.ROOT
    runner.ROOT = tree
    try:
        result = run_driver(row, url, backlog=0, runs=1)
    finally:
        runner.ROOT = previous
    if "error" in result:
        raise SystemExit(f"{tree}: {row.group}: {result['error']}")
    return float(result["rate"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--base", default=BEFORE_FLOW_AND_METRICS, help="the revision to compare against"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md's table")
    args = parser.parse_args()
    (runner.RESULTS_DIR / "logs").mkdir(parents=True, exist_ok=True)
    rates: Dict[str, Dict[str, List[float]]] = {}
    with revision_tree(args.base) as base_tree:
        server = PrivateRedis().start()
        try:
            for row in COMPARED:
                sides = rates.setdefault(row.group, {"base": [], "head": []})
                for _ in range(args.runs):
                    sides["base"].append(run_in(base_tree, row, server.url))
                    sides["head"].append(run_in(ROOT, row, server.url))
                    for extra in HEAD_ONLY if row.group == NOOP else []:
                        limited = rates.setdefault(f"{extra.group} ({extra.mode})", {"head": []})
                        limited["head"].append(run_in(ROOT, extra, server.url))
        finally:
            server.stop()
    print(f"rqconc at {args.base} (base) against the working tree (head), {args.runs} runs each")
    rows = []
    for group, sides in rates.items():
        if "base" not in sides:  # head only: beside the no-op row's base and head
            head, shown = statistics.median(sides["head"]), [round(v) for v in sides["head"]]
            print(f"{group:30} head {head:9,.0f}  runs {json.dumps(shown)}")
            rows.append(f"| {group} | | {head:,.0f} | | {shown} |")
            continue
        base, head = statistics.median(sides["base"]), statistics.median(sides["head"])
        print(f"{group:30} base {base:9,.0f}  head {head:9,.0f}  head/base {head / base:.2f}")
        print(f"{'':30} base runs {json.dumps([round(v) for v in sides['base']])}")
        print(f"{'':30} head runs {json.dumps([round(v) for v in sides['head']])}")
        runs = f"{[round(v) for v in sides['base']]} / {[round(v) for v in sides['head']]}"
        rows.append(f"| {group} | {base:,.0f} | {head:,.0f} | {head / base:.2f} | {runs} |")
    if args.results:
        replace_section(BEGIN, END, section(args.base, args.runs, rows))


def section(base: str, runs: int, rows: List[str]) -> str:
    return "\n".join(
        [
            BEGIN,
            "## SPEC 13: what limits, unique keys, metrics and richer events cost the no-op job",
            "",
            f"`bench/compare_revisions.py --base {base} --runs {runs}` (`make bench`): rqconc "
            f"at {base} (before issues 17 and 19) against this tree, alternating run by run "
            "on one private Redis, medians (target: head/base at least 0.95 on the no-op "
            "row, no limit set). The `:limits` row is this tree with a limit set on the "
            "queue that never binds (concurrency 1,000, rate 1,000,000/s).",
            "",
            "| row | base | head | head/base | runs base / head |",
            "|---|---:|---:|---:|---|",
            *rows,
            END,
        ]
    )


if __name__ == "__main__":
    main()
