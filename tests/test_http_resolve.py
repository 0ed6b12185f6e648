"""The HTTP client looks an index's host name up once for all its connections, against a real local index."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.indexserver import IndexServer
from support.wheelbuild import build_wheel

from abiprobe.net.http import Http


@pytest.fixture
def server(tmp_path: Path) -> Iterator[IndexServer]:
    with IndexServer() as srv:
        srv.add_wheel(build_wheel(tmp_path, "demo", "1.0", {"demo/__init__.py": b""}))
        yield srv


def test_many_connections_to_one_host_make_one_lookup(
    server: IndexServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the index named by a host name, and every lookup of that name counted (the real resolver
    # answers each one)
    looked_up: list[str] = []
    real = socket.getaddrinfo

    def counting(host: Any, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(str(host))
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", counting)
    url = server.index_url.replace("127.0.0.1", "localhost") + "demo/"
    # WHEN 32 requests go out, 8 at a time, each on a connection of its own or a kept one
    with Http(max_workers=8) as http:
        statuses = http.map(lambda _: http.get(url).status, range(32))
    # THEN every one was answered, and the name was looked up once (for the check that it exists, and
    # for every connection)
    assert statuses == [200] * 32
    assert looked_up.count("localhost") == 1, looked_up
