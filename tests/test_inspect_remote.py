"""`abiprobe inspect PROJECT==VERSION` / `inspect URL` against the local index server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.indexserver import IndexServer
from support.wheelbuild import build_wheel

from abiprobe.cli import main


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("remote-inspect")
    lib = build_shared(d, "libremote.so.1", "int remote_f(int x) { return x; }\n", soname="libremote.so.1")
    return build_wheel(d, "remote-demo", "1.2+cu130", {"remote_demo/libremote.so.1": lib}, tag="py3-none-any")


@pytest.fixture
def server() -> Iterator[IndexServer]:
    with IndexServer() as s:
        yield s


def _inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["inspect", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_warm_second_inspect_makes_no_request_for_the_wheel(
    server: IndexServer, wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a wheel on an index and an empty cache
    served = server.add_wheel(wheel)
    args = ("remote-demo==1.2+cu130", "--index-url", server.index_url, "--cache-dir", str(tmp_path / "c"))
    # WHEN it is inspected twice by name
    code1, first = _inspect(capsys, *args)
    wheel_requests_cold = server.requests[served.path]
    server.reset_counts()
    code2, second = _inspect(capsys, *args)
    # THEN the first run read the wheel by range, the second answered from the cache alone
    assert (code1, code2) == (0, 0)
    assert wheel_requests_cold >= 1
    assert server.requests[served.path] == 0
    assert first == second
    (src,) = first["sources"]  # type: ignore[misc]
    assert src["kind"] == "remote" and src["sha256"] == served.sha256
    assert [o["soname"] for o in src["objects"]] == ["libremote.so.1"]


def test_offline_inspect_of_an_unknown_wheel_is_one_clear_error(
    server: IndexServer, wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a wheel URL whose facts are not cached
    served = server.add_wheel(wheel)
    url = server.file_url(served.filename) + "#sha256=" + served.sha256
    # WHEN it is inspected with --offline
    code = main(["inspect", url, "--offline", "--cache-dir", str(tmp_path / "c")])
    # THEN it says so (exit 3, as every offline miss) and fetches nothing
    assert code == 3
    assert "--offline" in capsys.readouterr().err
    assert server.requests[served.path] == 0
