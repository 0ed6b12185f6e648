"""An HTTPS (CONNECT) forward proxy on 127.0.0.1 that counts the bytes it relays, for benches.

Put it in a tool's ``HTTPS_PROXY`` and it tunnels each TLS connection unchanged (no interception), so
what it counts from the servers is what the tool downloaded, TLS framing included (a fraction of a
percent on large files). Only CONNECT is served; anything else is answered 405.
"""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from types import TracebackType


class _Handler(socketserver.StreamRequestHandler):
    server: _Server
    rbufsize = 0  # unbuffered: nothing the client sends after the CONNECT headers is held back here

    def handle(self) -> None:
        line = self.rfile.readline(8192).decode("latin-1")
        while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
            pass
        method, _, rest = line.partition(" ")
        if method != "CONNECT":
            self.wfile.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return
        host, _, port = rest.split(" ", 1)[0].rpartition(":")
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
        except OSError:
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.wfile.flush()
        client = self.connection
        with upstream:
            upstream.settimeout(None)
            client.settimeout(None)
            self._pump(client, upstream)

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        ends = [client, upstream]
        while True:
            ready, _, _ = select.select(ends, [], [], 300)
            if not ready:
                return
            for end in ready:
                data = end.recv(1 << 16)
                if not data:
                    return
                if end is upstream:
                    self.server.add(len(data))
                    client.sendall(data)
                else:
                    upstream.sendall(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.received += n


class CountingProxy:
    """``with CountingProxy() as proxy:`` ... ``proxy.url``, ``proxy.received`` (bytes from servers)."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def received(self) -> int:
        return self._server.received

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
