"""A loopback TCP proxy a test can break on purpose: pass, drop or stall traffic.

Workers connect to the proxy instead of Redis; the test decides what the wire does:
- `drop(seconds)`: every open connection is closed at once (both sides see a reset or EOF)
  and new ones are accepted then closed straight away, until `seconds` have passed;
- `stall(seconds)`: connections stay open but no byte moves either way until `seconds` have
  passed (what a partition looks like to a client: writes succeed, no reply comes);
- `cut_reply_to(pattern, times)`: the next `times` requests holding `pattern` are forwarded
  and run, then their connection is closed before any reply gets back (a reset after the
  server ran the command: a network blip, an idle-timeout proxy, `CLIENT KILL`);
- `cut_replies(seconds, share, seed)`: for `seconds`, each request has the chance `share`
  of the same fate as above, on whichever connection it comes (`cuts` logs what was cut);
- `heal()`: back to passing traffic now.
One thread accepts, two threads per connection pump bytes; all are daemons, `close()` ends
them. The proxy only ever binds 127.0.0.1.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from typing import Dict, List, Optional, Tuple

_CHUNK = 65536


class TcpProxy:
    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(256)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: List[Tuple[socket.socket, socket.socket]] = []
        self._drop_until = 0.0
        self._stall_until = 0.0
        self._closed = False
        self._cut_pattern = b""
        self._cuts_left = 0
        self._refuse_after_cut = 0.0
        self._doomed: List[socket.socket] = []  # client sockets whose next reply is cut
        self._random_cut_until = 0.0
        self._random_cut_share = 0.0
        self._rng = random.Random()
        self._doomed_requests: Dict[socket.socket, bytes] = {}  # their requests' first bytes
        # (time.time(), the first bytes of the request) per reply cut: what ran unanswered.
        self.cuts: List[Tuple[float, bytes]] = []
        self.accepted = 0
        self.cut = 0  # how many replies were cut
        self._thread: Optional[threading.Thread] = None

    # ---- lifecycle ----
    def start(self) -> TcpProxy:
        self._thread = threading.Thread(target=self._accept_loop, name="tcp-proxy", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed = True
        try:
            self._listener.close()
        except OSError:
            pass
        self._close_all()

    def url(self, db: int = 0, auth: str = "") -> str:
        return f"redis://{auth}127.0.0.1:{self.port}/{db}"

    # ---- faults ----
    def drop(self, seconds: float) -> None:
        """Close every connection now and refuse new ones for `seconds`."""
        self._drop_until = time.monotonic() + seconds
        self._close_all()

    def stall(self, seconds: float) -> None:
        """Stop forwarding bytes (both ways) for `seconds`, keeping connections open."""
        self._stall_until = time.monotonic() + seconds

    def cut_reply_to(self, pattern: bytes, times: int = 1, then_refuse: float = 0.0) -> None:
        """Forward the next `times` requests holding `pattern`, then close their connection
        instead of passing the reply back, and refuse new connections for `then_refuse`
        seconds after each cut (the client reconnects later: what ran meanwhile shows)."""
        with self._lock:
            self._cut_pattern, self._cuts_left = pattern, times
            self._refuse_after_cut = then_refuse

    def cut_replies(self, seconds: float, share: float, seed: Optional[int] = None) -> None:
        """For `seconds`, forward each request and, with the chance `share`, close its
        connection instead of passing its reply back (a seeded draw per request)."""
        with self._lock:
            self._rng = random.Random(seed)
            self._random_cut_share = share
            self._random_cut_until = time.monotonic() + seconds

    def heal(self) -> None:
        self._drop_until = 0.0
        self._stall_until = 0.0
        self._random_cut_until = 0.0

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    # ---- internals ----
    def _close_all(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _shut(sock)

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if time.monotonic() < self._drop_until:
                _shut(client)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=3)
                upstream.settimeout(None)
            except OSError:
                _shut(client)  # the server is down: the client sees a refused connection
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._pairs.append((client, upstream))
                self.accepted += 1
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(src, dst, (client, upstream)), daemon=True
                ).start()

    def _pump(
        self, src: socket.socket, dst: socket.socket, pair: Tuple[socket.socket, socket.socket]
    ) -> None:
        try:
            while True:
                data = src.recv(_CHUNK)
                if not data:
                    break
                # Hold what arrived while stalled: a stall delays bytes, it never loses them
                # (a lost byte would be a broken TCP stream, not a partition).
                while time.monotonic() < self._stall_until and not self._closed:
                    time.sleep(0.01)
                if self._cutting(src, dst, data, pair):
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                if pair in self._pairs:
                    self._pairs.remove(pair)
            for sock in pair:
                _shut(sock)

    def _cutting(
        self,
        src: socket.socket,
        dst: socket.socket,
        data: bytes,
        pair: Tuple[socket.socket, socket.socket],
    ) -> bool:
        """Whether `data` is a reply to cut (then the pair is to be closed)."""
        client = pair[0]
        with self._lock:
            if src is client:  # a request: doom its reply before the server can answer
                if self._cuts_left and self._cut_pattern in data:
                    self._cuts_left -= 1
                    self._doomed.append(client)
                elif client not in self._doomed and self._random_cut():
                    self._doomed.append(client)
                    self._doomed_requests[client] = data[:512]
                return False
            if dst in self._doomed:
                self._doomed.remove(dst)
                self.cut += 1
                self.cuts.append((time.time(), self._doomed_requests.pop(dst, b"")))
                if self._refuse_after_cut:
                    self._drop_until = time.monotonic() + self._refuse_after_cut
                return True
        return False

    def _random_cut(self) -> bool:
        # Called with the lock held.
        if time.monotonic() >= self._random_cut_until:
            return False
        return self._rng.random() < self._random_cut_share


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
