"""SPEC 17: `rqconc job ID --logs` prints the lines a job logged, oldest first (`--json`: one
object with them); a job that logged none says so on stderr."""

import json

from rqconc.queue.queue import Queue
from tests.cli.test_commands import in_process, rqconc


def test_rqconc_job_logs_prints_the_lines_a_job_logged(redis_url):
    q = Queue(connection=redis_url)
    talked, silent = (
        q.enqueue("tests.queue.tasks:add", 1, 2),
        q.enqueue("tests.queue.tasks:add", 3, 4),
    )
    for n in range(3):
        talked.log(f"step {n} of 3")
    shown = rqconc("job", talked.id, "--logs", "--url", redis_url)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines == talked.logs() and [line.split(" ", 2)[2] for line in lines] == [
        f"step {n} of 3" for n in range(3)
    ]
    as_json = json.loads(
        in_process("job", talked.id, "--logs", "--json", "--url", redis_url).stdout
    )
    assert as_json == {"id": talked.id, "status": "queued", "logs": talked.logs()}
    none = in_process("job", silent.id, "--logs", "--url", redis_url)
    assert none.returncode == 0 and none.stdout == "" and "logged nothing" in none.stderr
    missing = rqconc("job", "nope", "--logs", "--url", redis_url)
    assert missing.returncode == 1 and "no such job nope" in missing.stderr
