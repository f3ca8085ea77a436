"""`--namespace` (and RQCONC_NAMESPACE) on every command: each acts on the namespace it is
given and leaves the default one alone, as real `rqconc` subprocesses on a real Redis."""

import functools
import json
import os
import subprocess
import sys
from subprocess import PIPE

import click
import pytest

from rqconc.cli.app import cli
from rqconc.queue.job import Job, JobStatus
from rqconc.queue.queue import Queue
from rqconc.store.keys import KeySpace
from rqconc.worker.redis_source import RedisSource
from tests.cli.test_commands import ENTRY, in_process, rqconc
from tests.dashboard.processes import Dashboard
from tests.queue import tasks
from tests.queue.helpers import take_and_run
from tests.support.redis_server import RedisServer
from tests.support.worker_process import ROOT

NS = "ns1"


def leaf_commands(group, prefix=()):
    """(path, command) of every runnable command under `group`."""
    context = click.Context(group)
    for name in group.list_commands(context):  # the lazy `rqconc` group loads each here
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def seed(url, namespace):
    """In `namespace`: a dead letter and a queued job `same` in queue `mail`, and a cron."""
    queue = Queue("mail", connection=url, namespace=namespace)
    dead = queue.enqueue(tasks.boom, f"dead in {namespace}")
    take_and_run(RedisSource(url, queues=["mail"], allow=["tests"], namespace=namespace))
    assert dead.status == JobStatus.FAILED
    queue.enqueue(tasks.add, 1, len(namespace), job_id="same")
    queue.cron("0 0 * * *", tasks.add, 1, 2, id=f"nightly-{namespace}")
    Queue(f"only-{namespace}", connection=url, namespace=namespace).enqueue(tasks.add, 1, 1)
    return dead.id


@pytest.fixture(scope="module")
def server(redis_binary):
    """One server for the module (one Redis version: the option is the CLI's, not Redis')."""
    server = RedisServer(redis_binary).start()
    yield server
    server.close()


@pytest.fixture
def seeded(server):
    """Both namespaces alike (same queue, same job id): what a command does shows which one
    it worked on."""
    server.client().flushall()
    url = server.url
    return {"url": url, "rqconc": seed(url, "rqconc"), NS: seed(url, NS)}


def job(url, namespace, job_id="same"):
    return Job.fetch(job_id, url, namespace)


def dead_count(url, namespace):
    return len(Queue("mail", connection=url, namespace=namespace).failed)


def check_enqueue(done, s):
    return job(s["url"], NS, done.stdout.strip()).func_name == "tests.queue.tasks:add"


def check_suspend(done, s):
    client = Queue(connection=s["url"]).connection
    return client.exists(KeySpace(NS).suspended) and not client.exists(KeySpace().suspended)


def check_worker(done, s):
    assert job(s["url"], NS).return_value == 1 + len(NS)
    return job(s["url"], "rqconc").status == JobStatus.QUEUED


WORKER = ("-n", "1", "--burst", "--allow", "tests", "-q", "mail")


def check_cron_list(done, s):
    return [entry["id"] for entry in json.loads(done.stdout)] == [f"nightly-{NS}"]


def check_cron_remove(done, s):
    assert not Queue("mail", connection=s["url"], namespace=NS).crons()
    return Queue("mail", connection=s["url"]).crons()


def check_cron_added(done, s):
    """`cron add` / `cron every` put the entry into NS only."""
    mine = {e.id for e in Queue("mail", connection=s["url"], namespace=NS).crons()}
    return {"added", "every"} & mine and not {"added", "every"} & {
        e.id for e in Queue("mail", connection=s["url"]).crons()
    }


def check_failed_list(done, s):
    return [row["id"] for row in json.loads(done.stdout)] == [s[NS]]


def check_purge(done, s):
    return dead_count(s["url"], NS) == 0 < dead_count(s["url"], "rqconc")


def check_info(done, s):
    report = json.loads(done.stdout)
    return [q["name"] for q in report["queues"]] == ["mail", f"only-{NS}"]


def check_requeue(done, s):
    return job(s["url"], NS, s[NS]).status == JobStatus.QUEUED and dead_count(s["url"], "rqconc")


def check_pause(done, s):
    return Queue("mail", connection=s["url"], namespace=NS).is_paused and not (
        Queue("mail", connection=s["url"]).is_paused
    )


def check_limits(done, s):
    mine = Queue("mail", connection=s["url"], namespace=NS).limits
    return mine.concurrency == 2 and Queue("mail", connection=s["url"]).limits.concurrency is None


def mail_count(url, namespace):
    return Queue("mail", connection=url, namespace=namespace).count


def check_emptied(done, s):
    return mail_count(s["url"], NS) == 0 < mail_count(s["url"], "rqconc")


def check_queue_deleted(done, s):
    return check_emptied(done, s) and dead_count(s["url"], NS) == 0 < dead_count(s["url"], "rqconc")


def check_job_deleted(done, s):
    gone = not Queue("mail", connection=s["url"], namespace=NS).connection.exists(
        KeySpace(NS).job("same")
    )
    return gone and job(s["url"], "rqconc").status == JobStatus.QUEUED


# Command path -> (arguments after it, the check of what it did in NS and not elsewhere).
CASES = {
    ("cancel",): (["same"], lambda d, s: job(s["url"], NS).status == JobStatus.CANCELED),
    ("cron", "list"): (["--json"], check_cron_list),
    ("cron", "remove"): ([f"nightly-{NS}"], check_cron_remove),
    ("cron", "add"): (
        ["0 1 * * *", "tests.queue.tasks:add", "1", "2", "-q", "mail", "--id", "added"],
        check_cron_added,
    ),
    ("cron", "every"): (
        ["90", "tests.queue.tasks:add", "1", "2", "-q", "mail", "--id", "every"],
        check_cron_added,
    ),
    ("enqueue",): (["-q", "mail", "tests.queue.tasks:add", "1", "2"], check_enqueue),
    ("events",): (["--json"], lambda d, s: s[NS] in d.stdout and s["rqconc"] not in d.stdout),
    ("failed", "list"): (["--json"], check_failed_list),
    ("metrics",): (
        [],
        lambda d, s: 'queue="only-ns1"' in d.stdout and "only-rqconc" not in d.stdout,
    ),
    ("failed", "purge"): ([], check_purge),
    ("failed", "show"): (["{dead}"], lambda d, s: f"dead in {NS}" in d.stdout),
    ("info",): (["--json", "-W"], check_info),
    ("limits",): (["mail", "--concurrency", "2"], check_limits),
    ("pause",): (["mail"], check_pause),
    ("job", "show"): (
        ["same", "--json"],
        lambda d, s: json.loads(d.stdout)["args"] == [1, len(NS)],
    ),
    ("job", "delete"): (["same", "--yes"], check_job_deleted),
    ("jobs",): (
        ["mail", "--status", "failed", "--json"],
        lambda d, s: s[NS] in d.stdout and s["rqconc"] not in d.stdout,
    ),
    ("empty",): (["mail", "--yes"], check_emptied),
    ("delete",): (["mail", "--yes"], check_queue_deleted),
    ("ping",): (["--worker", "w"], lambda d, s: f"in namespace '{NS}'" in d.stderr),
    ("requeue",): (["--all"], check_requeue),
    ("resume",): ([], lambda d, s: True),  # the flag set before it is gone: see the test
    ("server", "status"): (["--json"], lambda d, s: "running" in json.loads(d.stdout)),
    ("server", "stop"): ([], lambda d, s: "no embedded Redis server" in d.stdout),
    ("suspend",): ([], check_suspend),
    ("worker",): (["-b", "threading", *WORKER], check_worker),
}
EXIT = {("ping",): 1}  # no worker of that name in NS: the one line names the namespace
# Run as real subprocesses: the worker (its processes), the embedded server's commands, and
# the commands no other test of this directory runs as one. The others run in process: what
# is checked here is the namespace each one acts in; their exit codes and one-line errors
# are held by subprocess tests elsewhere.
AS_SUBPROCESS = {("worker",), ("server", "status"), ("server", "stop"), ("metrics",), ("limits",)}


def test_every_command_has_the_shared_namespace_option():
    paths = {path for path, _ in leaf_commands(cli)}
    # Each command's case below; the dashboard, a server, has a test of its own; `cluster
    # slots` needs a cluster (tests/scale/test_cluster.py runs it with --namespace).
    assert paths == {*CASES, ("dashboard",), ("cluster", "slots")}, "a command without a case"
    for path, command in leaf_commands(cli):
        (option,) = [p for p in command.params if "--namespace" in getattr(p, "opts", ())]
        assert option.envvar == "RQCONC_NAMESPACE", path


def test_the_dashboard_shows_the_namespace_given(seeded, tmp_path):
    dashboard = Dashboard(seeded["url"], tmp_path, "--namespace", NS)
    try:
        status, body = dashboard.wait_ready().request("/api/overview")
    finally:
        dashboard.close()
    assert status == 200
    assert [q["name"] for q in json.loads(body)["queues"]] == ["mail", f"only-{NS}"]


@pytest.mark.parametrize("path", sorted(CASES), ids=" ".join)
def test_each_command_works_on_the_namespace_given(path, seeded):
    args, check = CASES[path]
    args = [a.replace("{dead}", seeded[NS]) for a in args]
    if path == ("resume",):
        Queue(connection=seeded["url"]).connection.set(KeySpace(NS).suspended, 1)
    run = functools.partial(rqconc, timeout=60) if path in AS_SUBPROCESS else in_process
    done = run(*path, *args, "--namespace", NS, "--url", seeded["url"])
    assert done.returncode == EXIT.get(path, 0), done.stderr
    assert check(done, seeded), (done.stdout, done.stderr)
    if path == ("resume",):
        assert not Queue(connection=seeded["url"]).connection.exists(KeySpace(NS).suspended)


def run_all(*calls, cwd=ROOT):
    """Run `rqconc` command lines at once, each `(args, RQCONC_NAMESPACE or None)`; their
    (exit code, stdout, stderr), in order."""
    base = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "RQCONC_NAMESPACE")}
    running = []
    for args, env_namespace in calls:
        env = dict(base, **({"RQCONC_NAMESPACE": env_namespace} if env_namespace else {}))
        command = [sys.executable, "-c", ENTRY, *args]
        running.append(
            subprocess.Popen(command, cwd=cwd, env=env, stdout=PIPE, stderr=PIPE, text=True)
        )
    outputs = [p.communicate(timeout=60) for p in running]
    return [(p.returncode, out, err) for p, (out, err) in zip(running, outputs)]


def test_rqconc_namespace_from_the_environment_and_the_flag_above_it(seeded):
    url = seeded["url"]
    listing = ["failed", "list", "--json", "--url", url]
    (_, by_env, _), (_, flag_wins, _) = run_all(
        (listing, NS), ([*listing, "--namespace", "rqconc"], NS)
    )
    assert [row["id"] for row in json.loads(by_env)] == [seeded[NS]]
    assert [row["id"] for row in json.loads(flag_wins)] == [seeded["rqconc"]]


def test_print_config_shows_the_namespace_and_where_it_came_from(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.rqconc]\nnamespace = ["a", "b"]\n')
    (tmp_path / "settings.py").write_text('NAMESPACE = "cfg"\n')
    worker, config = ["worker", "--print-config"], ["-c", "settings.py"]
    shown = run_all(
        (worker, None),
        ([*worker, *config], None),
        ([*worker, *config], "c"),
        ([*worker, *config, "--namespace", "d,e"], "c"),
        cwd=tmp_path,
    )
    assert [code for code, _, _ in shown] == [0, 0, 0, 0]
    expected = [
        'namespace = "a,b"  # pyproject.toml [tool.rqconc]',
        'namespace = "cfg"  # config file settings.py',
        'namespace = "c"  # environment RQCONC_NAMESPACE',
        'namespace = "d,e"  # flag',
    ]
    for (_, out, _), line in zip(shown, expected):
        assert line in out.splitlines()


def test_a_bad_namespace_is_one_line_and_exit_2():
    url = ["--url", "redis://127.0.0.1:1"]
    cases = [
        (["info", "--namespace", "a,b"], "one namespace"),
        (["worker", "--namespace", "a,a"], "twice"),
        (["suspend", "--namespace", "{x}"], "invalid namespace"),
    ]
    done = run_all(*(([*args, *url], None) for args, _ in cases))
    for (code, _, err), (args, message) in zip(done, cases):
        assert code == 2 and message in err, args
        assert len(err.strip().splitlines()) == 1


def test_the_demo_runs_in_the_namespace_given(server):
    server.client().flushall()
    argv = [sys.executable, "main.py", "threading", "2", "--demo", "20", "--namespace", NS]
    done = subprocess.run(
        [*argv, "--url", server.url], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "20 demo jobs" in done.stdout
    tags = {key.split(b"}")[0] for key in server.client().keys("*")}
    assert tags == {b"{" + NS.encode()}
