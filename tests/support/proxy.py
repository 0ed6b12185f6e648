"""A tiny HTTP proxy on 127.0.0.1: CONNECT tunnels (for https URLs) and absolute-form requests (for http
URLs) relayed byte for byte; it records each request line it was asked for."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from types import TracebackType


class TinyProxy:
    def __init__(self) -> None:
        self.requests: list[str] = []  # the first request line of each client connection
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._open = True
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self._open:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        with contextlib.closing(client):
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            self.requests.append(line)
            method, target, _version = line.split(" ", 2)
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
            else:
                hostport = target.split("://", 1)[1].split("/", 1)[0]
                host, _, port = hostport.partition(":")
            try:
                upstream = socket.create_connection((host, int(port or 80)))
            except OSError:  # as a real proxy does: the client is told, not dropped
                client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                rest = head.split(b"\r\n\r\n", 1)[1]
            else:
                rest = head  # the server reads the absolute-form request line itself
            with contextlib.closing(upstream):
                if rest:
                    upstream.sendall(rest)
                self._relay(client, upstream)

    @staticmethod
    def _relay(a: socket.socket, b: socket.socket) -> None:
        while True:
            ready, _, _ = select.select([a, b], [], [], 10)
            if not ready:
                return
            for src in ready:
                data = src.recv(65536)
                if not data:
                    return
                (b if src is a else a).sendall(data)

    def close(self) -> None:
        self._open = False
        self._sock.close()

    def __enter__(self) -> TinyProxy:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
