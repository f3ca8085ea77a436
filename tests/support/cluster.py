"""A private Redis Cluster for tests: 3 masters + 3 replicas on free loopback ports.

Each node is a `RedisServer` (own port, own temporary directory, killed by pid) started with
cluster mode on; the slots are split by hand (CLUSTER ADDSLOTSRANGE needs 7.0, so ADDSLOTS),
the nodes meet, each replica follows its master, and the fixture waits for `cluster_state:ok`
on every node and for every replica to be in sync. A short node timeout (1 s) keeps a
failover test quick.
"""

from __future__ import annotations

import random
import socket
import time
from pathlib import Path
from typing import Dict, List, Optional

import redis

from tests.support.redis_server import RedisServer

SLOTS = 16384
NODE_TIMEOUT_MS = 1000


def cluster_port() -> int:
    """A free port for a cluster node: Redis also listens on port + 10000 (the cluster bus),
    so the port must be at most 55535 and that one free too."""
    for _ in range(1000):
        port = random.randint(20000, 55535)
        if all(_free(p) for p in (port, port + 10000)):
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _start(node: RedisServer, attempts: int = 5) -> None:
    """Start one node; another test process may take its ports first: then move elsewhere."""
    for attempt in range(attempts):
        try:
            node.start(_attempts=1)
            return
        except (RuntimeError, TimeoutError):
            node.kill()
            if attempt == attempts - 1:
                raise
            node.process, node.port = None, cluster_port()


class TLSNode(RedisServer):
    """A node that speaks TLS only, to clients, replicas and the cluster bus alike (`tls`: a
    directory of server.crt, server.key and ca.crt, as tests/security's `tls_files`)."""

    def __init__(
        self, binary: str, tls: Path, extra_args: tuple, password: Optional[str] = None
    ) -> None:
        super().__init__(binary, password=password, extra_args=extra_args)
        self.tls = tls

    def start(self, _attempts: int = 3) -> RedisServer:
        if not hasattr(self, "_plain_args"):
            self._plain_args = self.extra_args
        files = [
            ("--tls-cert-file", "server.crt"),
            ("--tls-key-file", "server.key"),
            ("--tls-ca-cert-file", "ca.crt"),
        ]
        self.extra_args = self._plain_args + ("--port", "0", "--tls-port", str(self.port))
        self.extra_args += ("--tls-cluster", "yes", "--tls-replication", "yes")
        self.extra_args += ("--tls-auth-clients", "no")
        for option, name in files:
            self.extra_args += (option, str(self.tls / name))
        return super().start(_attempts)

    def client(self) -> redis.Redis:
        ca = str(self.tls / "ca.crt")
        return redis.Redis(
            host="127.0.0.1", port=self.port, password=self.password, ssl=True, ssl_ca_certs=ca
        )


class RedisClusterProcesses:
    """`masters` masters, each with one replica (none with `replicas=False`: a benchmark that
    compares one master with one Redis must not charge it its replica's CPU); `url` is a
    redis+cluster:// URL of them all (rediss+cluster:// with `tls`, see TLSNode)."""

    def __init__(
        self,
        binary: str,
        masters: int = 3,
        password: Optional[str] = None,
        tls: Optional[Path] = None,
        replicas: bool = True,
    ) -> None:
        self.password = password
        self.tls = tls
        args = (
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            str(NODE_TIMEOUT_MS),
            # A replica promoted however long it was cut off: the test kills its master.
            "--cluster-replica-validity-factor",
            "0",
            "--cluster-require-full-coverage",
            "no",
            # CLUSTER SLOTS (Redis 7) lists a replica once it has a replication offset, and a
            # master of an empty data set moves its offset only by its pings to replicas:
            # every 10 s by default, which each cluster start waited for.
            "--repl-ping-replica-period",
            "1",
        )
        if password:
            args += ("--masterauth", password)
        self.nodes = [
            TLSNode(binary, tls, args) if tls else RedisServer(binary, password, extra_args=args)
            for _ in range(masters * (2 if replicas else 1))
        ]
        for node in self.nodes:  # each node writes its own config in its own directory
            node.extra_args += ("--cluster-config-file", f"{node.dir}/nodes.conf")
            node.port = cluster_port()
        self.masters = masters
        self.replicas = replicas

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        nodes = ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)
        if self.tls:
            return f"rediss+cluster://{auth}{nodes}?ssl_ca_certs={self.tls / 'ca.crt'}"
        return f"redis+cluster://{auth}{nodes}"

    def client(self, node: RedisServer) -> redis.Redis:
        return node.client()

    def start(self) -> RedisClusterProcesses:
        for node in self.nodes:
            _start(node)
        first = self.client(self.nodes[0])
        for node in self.nodes[1:]:
            first.execute_command("CLUSTER MEET", "127.0.0.1", node.port)
        step = SLOTS // self.masters
        for index, node in enumerate(self.nodes[: self.masters]):
            end = SLOTS if index == self.masters - 1 else (index + 1) * step
            self.client(node).execute_command("CLUSTER ADDSLOTS", *range(index * step, end))
        self._wait(lambda: all(len(self._known(n)) == len(self.nodes) for n in self.nodes))
        for master, replica in zip(self.nodes, self.nodes[self.masters :]):
            master_id = self.client(master).execute_command("CLUSTER MYID")
            self.client(replica).execute_command("CLUSTER REPLICATE", master_id)
        self.wait_ok()
        return self

    def _known(self, node: RedisServer) -> List[str]:
        """The nodes this one has met (handshakes done), as "address flags"."""
        nodes = self.client(node).cluster("nodes")
        return [
            f"{address} {info['flags']}"
            for address, info in nodes.items()
            if "handshake" not in info["flags"]
        ]

    def _wait(self, condition, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if condition():
                    return
            except (redis.exceptions.RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"the test cluster did not settle: {self.describe()}")
            time.sleep(0.1)

    def describe(self) -> str:
        try:
            return "; ".join(self._known(n)[0] for n in self.live_nodes())
        except (redis.exceptions.RedisError, OSError) as exc:
            return repr(exc)

    def live_nodes(self) -> List[RedisServer]:
        return [n for n in self.nodes if n.process is not None and n.process.poll() is None]

    def wait_ok(self, timeout: float = 60.0) -> None:
        """Until every live node says cluster_state:ok, every slot has a live master with a
        replica in sync (when its pair is alive), and they agree on who serves what."""
        self._wait(self._settled, timeout)

    def _settled(self) -> bool:
        live = self.live_nodes()
        for node in live:
            info = self.client(node).cluster("info")
            if info.get("cluster_state") != "ok":
                return False
        roles = [self.client(n).info("replication") for n in live]
        replicas = [r for r in roles if r["role"] == "slave"]
        if any(r.get("master_link_status") != "up" for r in replicas):
            return False
        # Every node tells the same map, replicas included: a test may ask any node (a CI
        # run read a master's CLUSTER SLOTS that did not list its replica yet).
        maps = {self._slot_map(n) for n in live}
        if len(maps) != 1:
            return False
        # Each master's replica is listed with its slots once both are alive.
        slots = self.client(live[0]).execute_command("CLUSTER SLOTS")
        wanted = 4 if self.replicas else 3  # start, end, master[, replica]
        return all(len(s) >= wanted for s in slots) or len(live) < len(self.nodes)

    def _slot_map(self, node: RedisServer) -> str:
        """Slot ranges with the ports of their master and replicas, as `node` sees them."""
        slots = self.client(node).execute_command("CLUSTER SLOTS")
        return repr(sorted((s[0], s[1], *(n[1] for n in s[2:])) for s in slots))

    def master_ports(self) -> Dict[int, int]:
        """First slot of each range -> port of its master, as a live node sees it."""
        slots = self.client(self.live_nodes()[0]).execute_command("CLUSTER SLOTS")
        return {int(s[0]): int(s[2][1]) for s in slots}

    def master_of_slot(self, slot: int) -> RedisServer:
        slots = self.client(self.live_nodes()[0]).execute_command("CLUSTER SLOTS")
        port = next(int(s[2][1]) for s in slots if s[0] <= slot <= s[1])
        return next(n for n in self.nodes if n.port == port)

    def flushall(self) -> None:
        for node in self.live_nodes():
            client = self.client(node)
            if client.info("replication")["role"] == "master":
                client.flushall()

    def close(self) -> None:
        for node in self.nodes:
            node.close()
