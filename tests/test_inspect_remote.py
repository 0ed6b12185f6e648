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


def test_a_full_disk_while_reading_a_remote_wheel_is_one_line(server: IndexServer, tmp_path: Path) -> None:
    # GIVEN a wheel whose library inflates to 20 MB (spooled to a temporary file past 16 MB), and a
    # process that may write no file larger than 4 MB (what a full disk does to the spool)
    import resource
    import subprocess
    import sys

    source = "const char big_pad[20 << 20] = {1};\nint big_f(void) { return 1; }\n"
    lib = build_shared(tmp_path, "libbig.so.1", source, soname="libbig.so.1")
    wheel = build_wheel(tmp_path, "big-demo", "1.0", {"big_demo/libbig.so.1": lib}, tag="py3-none-any")
    served = server.add_wheel(wheel)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))

    argv = ["inspect", server.served_url(served), "--cache-dir", str(tmp_path / "c")]
    run = subprocess.run(
        [sys.executable, "-m", "abiprobe", *argv], capture_output=True, text=True, preexec_fn=small_files
    )
    # THEN it says so in one line, with a non-zero exit, and no traceback
    assert run.returncode != 0
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.startswith("abiprobe: error:")]
    assert len(lines) == 1 and "File too large" in lines[0], run.stderr[-2000:]
