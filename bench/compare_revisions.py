"""rqconc against an earlier revision of itself, in one run: did a change slow the hot path?

    .venv/bin/python bench/compare_revisions.py [--base REV] [--runs 5] [--noop-only] [--results]

Checks REV out into a temporary git worktree and runs rqconc's no-op (forking 2) and
enqueue rows (single calls, batch) from `bench/run.py`, alternating between REV and the
working tree run by run, on one private Redis: both sides see the same machine load, so the
ratio of their medians is the figure to read (the absolute numbers move with the load).
Both sides run this tree's harness (its bench/ is copied over the base's) with their own
rqconc, and this virtualenv's packages.

The default base, 788155d, is the code before limits, unique keys, metrics counters and the
richer events (issues 17 and 19): SPEC 13 allows them at most 5% of the plain no-op job's
throughput, measured against it in the same run. `make bench` runs this with --results,
which writes the table into bench/RESULTS.md (between the markers below). SPEC 5 asks that
today's no-op be no slower than ed5a5be's: `make bench` also runs `--base ed5a5be
--noop-only` (the no-op task is one INCR, as in every no-op row); each base has its own
section.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
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
# The no-op as SPEC 5 names it (forking 2, one job at a time per child), and the enqueues.
COMPARED = [r for r in COMPARED if r.mode in ("", "forking:2")]
BEFORE_FLOW_AND_METRICS = "788155d"
SPEC5_BASE = "ed5a5be"


def markers(base: str):
    """The RESULTS.md section of one base (788155d keeps the name it has always had)."""
    if base == BEFORE_FLOW_AND_METRICS:
        return "<!-- spec13-cost:begin -->", "<!-- spec13-cost:end -->"
    return f"<!-- compare {base}:begin -->", f"<!-- compare {base}:end -->"


def same_harness(tree: Path) -> None:
    """This tree's bench/ over the base tree's: both sides then run one harness (driver,
    workloads, tasks, warm-ups) and differ only in rqconc's own code. The rows compared use
    the API both revisions have (Queue.enqueue, enqueue_many, main.py's options)."""
    shutil.copytree(
        ROOT / "bench",
        tree / "bench",
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns(".peers-venv", "results", "__pycache__"),
    )


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
    parser.add_argument("--noop-only", action="store_true", help="the no-op row only")
    parser.add_argument("--results", action="store_true", help="write bench/RESULTS.md's table")
    args = parser.parse_args()
    compared = [r for r in COMPARED if r.group == NOOP] if args.noop_only else COMPARED
    (runner.RESULTS_DIR / "logs").mkdir(parents=True, exist_ok=True)
    rates: Dict[str, Dict[str, List[float]]] = {}
    with revision_tree(args.base) as base_tree:
        same_harness(base_tree)
        server = PrivateRedis().start()
        try:
            for row in compared:
                sides = rates.setdefault(row.group, {"base": [], "head": []})
                for _ in range(args.runs):
                    sides["base"].append(run_in(base_tree, row, server.url))
                    sides["head"].append(run_in(ROOT, row, server.url))
                    for extra in HEAD_ONLY if row.group == NOOP and not args.noop_only else []:
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
            rows.append(f"| {group} | | {head:,.0f} | | | | {shown} |")
            continue
        base, head = statistics.median(sides["base"]), statistics.median(sides["head"])
        paired = paired_ratio(sides["base"], sides["head"])
        interval = paired_interval(sides["base"], sides["head"])
        print(
            f"{group:30} base {base:9,.0f}  head {head:9,.0f}  head/base {head / base:.2f}"
            f"  paired {paired:.2f} (95%: {interval})"
        )
        print(f"{'':30} base runs {json.dumps([round(v) for v in sides['base']])}")
        print(f"{'':30} head runs {json.dumps([round(v) for v in sides['head']])}")
        runs = f"{[round(v) for v in sides['base']]} / {[round(v) for v in sides['head']]}"
        rows.append(
            f"| {group} | {base:,.0f} | {head:,.0f} | {head / base:.2f} | {paired:.2f} "
            f"| {interval} | {runs} |"
        )
    if args.results:
        only = " --noop-only" if args.noop_only else ""
        replace_section(*markers(args.base), section(args.base, args.runs, rows, only))


def paired_ratio(base: List[float], head: List[float]) -> float:
    """The median of head/base over the runs made one after the other (run i of each side):
    the machine's speed drifts (on a shared 2-core machine, by a fifth within minutes), and
    two neighbouring runs share its state, so their ratio cancels the drift that the ratio of
    the two sides' medians keeps."""
    return statistics.median(h / b for b, h in zip(base, head))


def paired_interval(base: List[float], head: List[float], level: float = 0.95) -> str:
    """How far the paired median could be from the truth with this many runs: the central
    `level` of the paired medians of 2,000 resamples of the run pairs (a bootstrap, seeded so
    that one table always gives one answer). A range that holds 1.00 is a difference these
    runs cannot show either way; a point estimate alone cannot say that on a machine whose
    runs spread by a fifth."""
    ratios = [h / b for b, h in zip(base, head)]
    if len(ratios) < 3:
        return "-"
    draw = random.Random(0)
    medians = sorted(statistics.median(draw.choices(ratios, k=len(ratios))) for _ in range(2000))
    cut = int(len(medians) * (1 - level) / 2)
    return f"{medians[cut]:.2f}-{medians[-cut - 1]:.2f}"


def section(base: str, runs: int, rows: List[str], only: str = "") -> str:
    begin, end = markers(base)
    if base != BEFORE_FLOW_AND_METRICS:
        return "\n".join(
            [
                begin,
                f"## Today's no-op against {base}'s (SPEC 5: must not be slower)",
                "",
                f"`bench/compare_revisions.py --base {base}{only} --runs {runs}` "
                f"(`make bench`): rqconc at {base} against this tree, `forking 2`, 10,000 no-op "
                "jobs (one `INCR` each), and the enqueue rows unless --noop-only, alternating "
                "run by run on one private Redis, one harness (this tree's bench/): head/base is "
                "the ratio of the two sides' medians, `paired` the median of each run's ratio to "
                "the base run just before it (drift of the machine's speed cancels in it), "
                "`95%` the range a bootstrap of the run pairs gives that median (a range that "
                "holds 1.00: no difference these runs can show, either way).",
                "",
                "| row | base | head | head/base | paired | 95% | runs base / head |",
                "|---|---:|---:|---:|---:|---|---|",
                *rows,
                end,
            ]
        )
    return "\n".join(
        [
            begin,
            "## SPEC 13: what limits, unique keys, metrics and richer events cost the no-op job",
            "",
            f"`bench/compare_revisions.py --base {base} --runs {runs}` (`make bench`): rqconc "
            f"at {base} (before issues 17 and 19) against this tree, alternating run by run "
            "on one private Redis, medians (target: head/base at least 0.95 on the no-op "
            "row, no limit set). The `:limits` row is this tree with a limit set on the "
            "queue that never binds (concurrency 1,000, rate 1,000,000/s).",
            "",
            "| row | base | head | head/base | paired | 95% | runs base / head |",
            "|---|---:|---:|---:|---:|---|---|",
            *rows,
            end,
        ]
    )


if __name__ == "__main__":
    main()
