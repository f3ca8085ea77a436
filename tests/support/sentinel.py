"""A Sentinel deployment for tests: 1 master + 1 replica + 3 sentinels on free local ports.

Started from the same redis-server binary as every other test server (`redis-server
--sentinel` is Sentinel mode of that binary), with short down-after / failover timeouts so a
failover takes a few seconds, and torn down by pid.

With `tls` (a directory of server.crt, server.key and ca.crt, as tests/security's `tls_files`)
the data nodes speak TLS only (TLSNode) and the URL is `rediss+sentinel://...?ssl_ca_certs=`.
The sentinels keep a plain port for clients: rqconc's URL means TLS to the data nodes only.
`tls-replication yes` is what makes a sentinel use TLS towards the instances it watches, and
the other sentinels too, so each sentinel also listens on a TLS port, which it announces to
the others in place of its plain one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, List, Optional, Tuple
from urllib.parse import quote

import redis

from tests.support.cluster import TLSNode
from tests.support.redis_server import RedisServer, free_port

SERVICE = "rqconc-test"
# The master counts as down after this silence (ms); sentinels then elect a leader and promote.
DOWN_AFTER_MS = 2000
FAILOVER_TIMEOUT_MS = 5000


class SentinelProcess:
    """One `redis-server --sentinel` on a free port, with its own config file (Sentinel
    rewrites it)."""

    def __init__(
        self,
        binary: str,
        master_port: int,
        directory: str,
        password: Optional[str] = None,
        tls: Optional[Path] = None,
    ) -> None:
        self.binary = binary
        self.master_port, self.password, self.tls = master_port, password, tls
        self.dir = tempfile.mkdtemp(prefix="sentinel-", dir=directory)
        self.config = os.path.join(self.dir, "sentinel.conf")
        self.process: Optional[subprocess.Popen] = None
        self._configure()

    def _configure(self) -> None:
        """A fresh free port and the config file naming it (Sentinel rewrites the file)."""
        self.port = free_port()
        master_port, password = self.master_port, self.password
        with open(self.config, "w") as f:
            f.write(
                f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\n"
                f"logfile {os.path.join(self.dir, 'sentinel.log')}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {SERVICE} 1\n"
            )
            if password:  # the data nodes' password, which the sentinels need to watch them
                f.write(f"sentinel auth-pass {SERVICE} {password}\n")
            if self.tls:
                f.write(self._tls_config(self.tls))

    @staticmethod
    def _tls_config(tls: Path) -> str:
        """TLS to the data nodes and between sentinels (both follow `tls-replication`); the
        plain `port` stays for clients. Without `tls-replication yes` a sentinel talks plain
        to the TLS-only master and never sees it up, let alone its replica; without a
        `tls-port` the sentinels mark each other down and never fail over."""
        return (
            f"tls-port {free_port()}\ntls-replication yes\ntls-auth-clients no\n"
            f"tls-cert-file {tls / 'server.crt'}\ntls-key-file {tls / 'server.key'}\n"
            f"tls-ca-cert-file {tls / 'ca.crt'}\n"
        )

    def start(self) -> SentinelProcess:
        # A port found free may be bound by another test process before this one binds it
        # (the sentinel then exits: "Address already in use"): start again on another.
        for _ in range(5):
            self.process = subprocess.Popen(
                [self.binary, self.config, "--sentinel"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if self._answers():
                return self
            self.stop()
            self._configure()
        raise RuntimeError(f"no sentinel could listen: see {self.dir}")

    def _answers(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                return bool(self.client().ping())
            except redis.exceptions.RedisError:
                time.sleep(0.05)
        return False

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2, socket_connect_timeout=2)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(5)


class SentinelDeployment:
    """The servers of one Sentinel group; `url` is the rqconc URL that reaches its master."""

    def __init__(
        self, binary: str, password: Optional[str] = None, tls: Optional[Path] = None
    ) -> None:
        self.binary = binary
        self.password = password
        self.tls = tls
        self.dir = tempfile.mkdtemp(prefix="rqconc-sentinel-")
        # Every data node may become the master or a replica: each needs both settings.
        self.node_args = ("--masterauth", password) if password else ()
        self.master = self._data_node(self.node_args)
        self.replica: Optional[RedisServer] = None
        self.sentinels: List[SentinelProcess] = []

    def _data_node(self, args: tuple) -> RedisServer:
        if self.tls:  # TLS only, replication included (TLSNode sets --tls-replication yes)
            return TLSNode(self.binary, self.tls, args, password=self.password)
        return RedisServer(self.binary, password=self.password, extra_args=args)

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        if self.tls:
            ca = quote(str(self.tls / "ca.crt"))
            return f"rediss+sentinel://{auth}{hosts}/{SERVICE}/0?ssl_ca_certs={ca}"
        return f"redis+sentinel://{auth}{hosts}/{SERVICE}/0"

    def node_client(self, port: int, **options: Any) -> redis.Redis:
        """A client of one data node by port (TLS, verified against the CA, in TLS mode)."""
        if self.tls:
            options.update(ssl=True, ssl_ca_certs=str(self.tls / "ca.crt"))
        return redis.Redis(host="127.0.0.1", port=port, password=self.password, **options)

    def start(self) -> SentinelDeployment:
        self.master.start()
        follow = ("--replicaof", "127.0.0.1", str(self.master.port))
        self.replica = self._data_node((*self.node_args, *follow)).start()
        self.sentinels = [
            SentinelProcess(
                self.binary, self.master.port, self.dir, self.password, self.tls
            ).start()
            for _ in range(3)
        ]
        self.wait_ready()
        return self

    def data_nodes(self) -> List[RedisServer]:
        return [node for node in (self.master, self.replica) if node is not None]

    def master_address(self) -> Optional[Tuple[str, int]]:
        """The master as the first sentinel that answers names it."""
        for sentinel in self.sentinels:
            try:
                reply = sentinel.client().sentinel_get_master_addr_by_name(SERVICE)
            except redis.exceptions.RedisError:
                continue
            if reply:
                return reply[0].decode() if isinstance(reply[0], bytes) else reply[0], int(reply[1])
        return None

    def agreed_master_address(self) -> Optional[Tuple[str, int]]:
        """The master every sentinel names, or None while they disagree (mid-failover, a
        sentinel may still name the old one)."""
        seen = set()
        for sentinel in self.sentinels:
            try:
                reply = sentinel.client().sentinel_get_master_addr_by_name(SERVICE)
            except redis.exceptions.RedisError:
                return None
            if not reply:
                return None
            seen.add(int(reply[1]))
        return ("127.0.0.1", seen.pop()) if len(seen) == 1 else None

    def master_address_text(self) -> Tuple[str, str]:
        address = self.master_address()
        if address is None:
            raise RuntimeError("no sentinel names a master")
        return address[0], str(address[1])

    def current_master(self) -> RedisServer:
        address = self.master_address()
        for node in self.data_nodes():
            if address and node.port == address[1]:
                return node
        raise RuntimeError(f"no known node is the master {address}")

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Every sentinel knows the master, its replica and the other two sentinels, and the
        replica has synced: a failover can happen from here on."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self._sentinel_ready(s) for s in self.sentinels) and self._replica_synced():
                return
            time.sleep(0.1)
        raise TimeoutError(f"the Sentinel group did not come up: see {self.dir}")

    def _sentinel_ready(self, sentinel: SentinelProcess) -> bool:
        try:
            state = sentinel.client().sentinel_master(SERVICE)
        except redis.exceptions.RedisError:
            return False
        return (
            int(state.get("num-slaves", 0)) >= 1
            and int(state.get("num-other-sentinels", 0)) >= 2
            and not state.get("is_sdown")
        )

    def wait_replica_caught_up(self, timeout: float = 10.0) -> None:
        """Wait until the replica holds every write the master has: WAIT counts the writes
        of its own connection, so one write and the WAIT go on one connection."""
        client = self.node_client(self.current_master().port, single_connection_client=True)
        client.set("rqconc-test:caught-up", 1)
        acknowledged = client.wait(1, int(timeout * 1000))
        client.close()
        if int(acknowledged) < 1:
            raise TimeoutError("the replica did not catch up")

    def replica_online(self) -> bool:
        """Whether the master has a replica in sync (after a failover: the old node back)."""
        return self._replica_synced()

    def _replica_synced(self) -> bool:
        try:
            info = self.current_master().client().info("replication")
        except (redis.exceptions.RedisError, RuntimeError):
            return False
        return any(
            isinstance(v, dict) and v.get("state") == "online"
            for k, v in info.items()
            if k.startswith("slave")
        )

    def kill_master(self) -> RedisServer:
        """SIGKILL the current master (the machine's loss); returns it (dead)."""
        master = self.current_master()
        master.kill()
        return master

    def wait_promoted(self, old: RedisServer, timeout: float = 60.0) -> float:
        """Wait until the sentinels name another master that answers as one; returns the
        monotonic time it was first seen."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            address = self.agreed_master_address()
            if address and address[1] != old.port:
                try:
                    node = self.node_client(address[1], socket_timeout=2)
                    role = node.role()[0]
                except redis.exceptions.RedisError:
                    role = b""
                if role in (b"master", "master"):
                    return time.monotonic()
            time.sleep(0.05)
        raise TimeoutError(f"no replica was promoted: see {self.dir}")

    def close(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for node in self.data_nodes():
            node.close()
        shutil.rmtree(self.dir, ignore_errors=True)
