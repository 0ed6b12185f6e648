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
from abiprobe.net.names import HostNames


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


def test_a_name_that_does_not_exist_is_kept_and_a_temporary_failure_is_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []
    real = socket.getaddrinfo
    failures = iter([socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")])

    def resolver(host: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(str(host))
        if host == "localhost":  # the first lookup fails as a resolver that is not answering does
            failure = next(failures, None)
            if failure is not None:
                raise failure
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    names = HostNames()
    # GIVEN a name that does not exist: the resolver's words, then the same again without asking it
    first = names.unresolved("no-such-index.invalid", 80)
    assert first is not None and names.unresolved("no-such-index.invalid", 80) == first
    assert asked.count("no-such-index.invalid") == 1
    # AND a temporary failure: told, and the next connection asks again (and resolves)
    with pytest.raises(socket.gaierror):
        names.addresses("localhost", 80)
    assert names.addresses("localhost", 80)
    assert asked.count("localhost") == 2


def test_a_name_the_resolver_cannot_even_encode_is_told_and_asked_again() -> None:
    # GIVEN a host label longer than IDNA allows (the lookup raises UnicodeError, not a socket error)
    names = HostNames()
    host = "a" * 70 + ".invalid"
    # THEN each lookup raises it, the second one too, rather than waiting on the first forever
    for _ in range(2):
        with pytest.raises(UnicodeError):
            names.addresses(host, 80)
    assert names.unresolved(host, 80) is None  # left to the connection attempt to say
