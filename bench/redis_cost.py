"""Redis CPU per job, rqconc beside Huey, Dramatiq and RQ measured the same way in one run.

    .venv/bin/python bench/redis_cost.py [--runs 3] [--jobs 20000] [--only rqconc,huey]

One private redis-server (bench.common.PrivateRedis); for each system, --runs runs of
`python -m bench.cost_driver` in the system's own virtualenv (see that module for the three
phases and why the task sends Redis nothing). The medians go to the "Redis time per job"
section of bench/RESULTS.md (between the markers below; added at the end when missing, so a
full `make bench` and this script can each rewrite their own part) and the raw runs to
bench/results/redis_cost.json. `make bench` runs it after the throughput table.

One Redis core's ceiling follows from the sum: a job that costs Redis C us of CPU caps one
master near 1e6 / C jobs/s, however many workers run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, PrivateRedis, replace_section  # noqa: E402

BENCH = ROOT / "bench"
BEGIN, END = "<!-- redis-cost:begin -->", "<!-- redis-cost:end -->"
PHASES = ("enqueue_single", "enqueue_batch", "run")


class Row(NamedTuple):
    """One row: a system, its worker mode (bench/peers), how it runs, what its Redis work
    leaves out compared with rqconc's, and the task (bench/tasks.py; cost_driver --task)."""

    system: str
    mode: str
    label: str
    skips: str
    task: str = "quiet"


SAME_AS_ASYNC = "as forking 2; the slots' takes and completions go to Redis together"
SYSTEMS: List[Row] = [
    Row(
        "rqconc",
        "forking:2",
        "forking 2",
        "lease with fencing token, strict FIFO per priority, crash recovery, "
        "`started` + `finished` events, status counters",
    ),
    Row(
        "rqconc",
        "forking:2:16",
        "forking 2 --slots 16",
        "as forking 2; the slots of a process that finish together complete in one step "
        "(complete_many, issue 21)",
    ),
    Row(
        "rqconc",
        "asyncio:200",
        "asyncio 200",
        "as forking 2; one process whose 200 slots are tasks of one event loop: their takes "
        "and completions go to Redis together (the native core, issue 34)",
    ),
    Row(
        "rqconc",
        "forking:2:100",
        "forking 2 --slots 100",
        "as asyncio 200, on two processes of 100 slots each (SPEC 15)",
    ),
    # SPEC 15's own workload: `async def` jobs awaiting 10 ms (the rows above run `quiet`,
    # a plain function, which the native core hands to its thread pool).
    Row(
        "rqconc",
        "asyncio:200",
        "asyncio 200, async def 10 ms",
        SAME_AS_ASYNC + " (SPEC 15's jobs: tasks of the one event loop)",
        "aquiet10",
    ),
    Row(
        "rqconc",
        "forking:2:100",
        "forking 2 --slots 100, async def 10 ms",
        SAME_AS_ASYNC + ", in two processes (SPEC 15's jobs)",
        "aquiet10",
    ),
    Row(
        "huey",
        "process:2",
        "-k process -w 2",
        "no acknowledgement and no lease (BRPOP: a job whose consumer dies is lost), "
        "no events, no status kept",
    ),
    Row(
        "dramatiq",
        "2:8",
        "-p 2 -t 8",
        "acknowledgement with per-worker heartbeats (unacked messages of dead workers come "
        "back), prefetch; no fencing, no events, no status kept",
    ),
    Row(
        "rq",
        "simple:2",
        "2 x SimpleWorker",
        "started/finished registries and a job hash; no fencing of a late completion, "
        "no event stream",
    ),
]


def python_of(system: str) -> str:
    if system == "rqconc":
        return sys.executable
    from bench.run import PEERS_PYTHON, ensure_peers_venv

    ensure_peers_venv()
    return PEERS_PYTHON


def one_run(row: Row, url: str, jobs: int) -> Dict[str, Any]:
    system = row.system
    argv = [python_of(system), "-m", "bench.cost_driver", system, "--url", url]
    argv += ["--mode", row.mode, "--task", row.task]
    argv += ["--jobs", str(jobs), "--singles", str(max(500, jobs // 10))]
    done = subprocess.run(argv, cwd=str(ROOT), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{system}: cost driver failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_run(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The run whose take + complete cost is the median: its command table goes with it."""
    ordered = sorted(runs, key=lambda r: r["run"]["cpu_us"])
    chosen = dict(ordered[len(ordered) // 2])
    chosen["medians"] = {p: statistics.median(r[p]["cpu_us"] for r in runs) for p in PHASES}
    return chosen


def top_commands(phase: Dict[str, Any], count: int = 8) -> str:
    shown = []
    for name, v in list(phase["commands"].items())[:count]:
        if v["calls"] >= 0.01 or v["usec"] >= 0.1:  # a batch's one EVALSHA per 1,000 jobs
            shown.append(f"{name} {v['calls']:.2g}x {v['usec']:.1f}")
    return ", ".join(shown)


def section(results: Dict[str, Dict[str, Any]], runs: int, jobs: int, version: str) -> str:
    lines = [
        BEGIN,
        "## Redis time per job",
        "",
        f"`bench/redis_cost.py`: Redis {version}, one private server, {jobs:,} jobs of a task "
        "that sends Redis nothing (counted by a byte appended to a file; `quiet`, a plain "
        "function, except in the rows marked `async def 10 ms`: SPEC 15's job, awaiting "
        "`asyncio.sleep(0.01)` first), median of "
        f"{runs} runs; CPU of redis-server (`INFO cpu`, user + sys) per job. "
        "`run` = take + complete and everything the workers do meanwhile (heartbeats, "
        "lease renewals, polls). Batch = each system's fastest way to queue many jobs.",
        "",
        "| system | workers | enqueue (single) us | enqueue (batch) us | take + complete us "
        "| batch + run us | one core's ceiling, jobs/s | what it leaves out |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for system, _mode, label, skips, _task in SYSTEMS:
        if label not in results:
            continue
        m = results[label]["medians"]
        total = m["enqueue_batch"] + m["run"]
        lines.append(
            f"| {system} | {label} | {m['enqueue_single']:.1f} | {m['enqueue_batch']:.1f} | "
            f"{m['run']:.1f} | {total:.1f} | {1e6 / total:,.0f} | {skips} |"
        )
    lines += [
        "",
        "Commands per job in the median run (calls per job, usec per job; a "
        "command run inside a Lua script also counts inside EVALSHA's usec):",
        "",
    ]
    for system, _mode, label, _skips, _task in SYSTEMS:
        if label in results:
            r = results[label]
            lines.append(f"- **{system}** ({label}) enqueue: {top_commands(r['enqueue_batch'])}")
            lines.append(f"  take + complete: {top_commands(r['run'])}")
    lines += ["", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--only", default="", help="comma-separated systems")
    args = parser.parse_args()
    wanted = set(filter(None, args.only.split(","))) or {s[0] for s in SYSTEMS}
    server = PrivateRedis().start()
    results: Dict[str, Dict[str, Any]] = {}  # by label: a system may have several rows
    raw: Dict[str, List[Dict[str, Any]]] = {}
    try:
        for row in SYSTEMS:
            system, label = row.system, row.label
            if system not in wanted:
                continue
            raw[label] = [one_run(row, server.url, args.jobs) for _ in range(args.runs)]
            results[label] = median_run(raw[label])
            m = results[label]["medians"]
            print(
                f"{system:9} {label:38} enqueue single {m['enqueue_single']:6.1f} us  batch "
                f"{m['enqueue_batch']:6.1f} us  take+complete {m['run']:6.1f} us",
                flush=True,
            )
        text = section(results, args.runs, args.jobs, server.version())
    finally:
        server.stop()
    (BENCH / "results").mkdir(exist_ok=True)
    (BENCH / "results" / "redis_cost.json").write_text(json.dumps(raw, indent=1))
    replace_section(BEGIN, END, text)
    print("wrote the 'Redis time per job' section of bench/RESULTS.md")


if __name__ == "__main__":
    main()
