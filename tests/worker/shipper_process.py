"""A shipper in a process of its own, for tests/worker/test_event_retention.py:
`python -m tests.worker.shipper_process URL OUT HANG_AFTER CONSUMER CLAIM_IDLE` ships the
namespace's events to the file OUT (a line `entry-id job-id event` each), as consumer
CONSUMER ("" for ship's default) of group `shippers`; with HANG_AFTER > 0 its handler stops
in the middle of a batch after that many events, prints `hanging` and waits to be killed."""

import sys
import time

from rqconc.queue.events import EventStream


def main(url: str, out: str, hang_after: int, consumer: str, claim_idle: float) -> None:
    handled = 0
    with open(out, "a") as lines:

        def handle(event):
            nonlocal handled
            if hang_after and handled >= hang_after:
                print("hanging", flush=True)
                time.sleep(3600)
            lines.write(f"{event['id'].split('.')[0]} {event['job_id']} {event['event']}\n")
            lines.flush()
            handled += 1

        EventStream(url).ship(
            handle, group="shippers", consumer=consumer or None, batch=50, claim_idle=claim_idle
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
