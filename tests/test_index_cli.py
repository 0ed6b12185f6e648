"""`abiprobe index ls` end to end against the local index server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.schemas import assert_valid
from support.wheelbuild import build_wheel

from abiprobe.cli import main


@pytest.fixture
def server(tmp_path: Path) -> Iterator[IndexServer]:
    wheel = build_wheel(tmp_path / "w", "demo", "2.0+cu130", {"demo/__init__.py": b""})
    with IndexServer() as srv:
        srv.add_wheel(wheel, href="absolute", yanked="bad build")
        yield srv


def test_index_ls_json_lists_candidates_and_index_outcomes(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN listing demo from the local index as JSON
    code = main(
        ["index", "ls", "demo", "--index", server.index_url, "--cache-dir", str(tmp_path / "c"), "--json"]
    )
    out = assert_valid(json.loads(capsys.readouterr().out), "index-ls")
    # THEN the one candidate shows its local label, yank reason, metadata and the index that answered
    assert code == 0
    (candidate,) = out["candidates"]
    assert (candidate["version"], candidate["local_label"]) == ("2.0+cu130", "cu130")
    assert candidate["file"]["yanked"] == "bad build"
    assert candidate["file"]["url"] == server.file_url("demo-2.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl")
    assert [(i["status"], i["used"]) for i in out["indexes"]] == [("ok", True)]


def test_index_ls_offline_from_empty_cache_exits_3(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["index", "ls", "demo", "--index", server.index_url, "--cache-dir", str(tmp_path / "c")]
    assert main([*args, "--offline"]) == 3
    assert "not in the cache (offline)" in capsys.readouterr().err


def test_index_ls_human_table_names_the_version(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "ls", "demo", "--index", server.index_url, "--no-cache"]) == 0
    assert "cu130" in capsys.readouterr().out


def test_index_ls_human_text_keeps_the_used_marker(
    server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN listing demo as text: THEN the answering index line says "[used]" (not eaten as rich markup)
    assert main(["index", "ls", "demo", "--index", server.index_url, "--no-cache"]) == 0
    assert "1 wheels [used]" in capsys.readouterr().out


def test_bad_pin_is_a_usage_error(server: IndexServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "ls", "demo", "--index", server.index_url, "--pin", "demo"]) == 2
    assert "--pin takes PROJECT=INDEX" in capsys.readouterr().err


def test_unknown_project_exits_1_with_the_reason_on_stderr(
    server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN listing a project no index has
    code = main(["index", "ls", "nosuchpkg", "--index", server.index_url, "--no-cache"])
    captured = capsys.readouterr()
    # THEN the exit status says so and so does one line on stderr
    assert code == 1
    assert "no index has a project named 'nosuchpkg' (asked: 127.0.0.1:" in captured.err


def test_a_find_links_page_does_not_make_an_unknown_project_known(
    server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # a find-links page answers for every project: it lists no nosuchpkg, so the project is still unknown
    argv = ["index", "ls", "nosuchpkg", "--index", server.index_url, "--find-links", server.find_links_url]
    assert main([*argv, "--no-cache", "--strategy", "best-match"]) == 1


def test_piped_table_is_never_cut(server: IndexServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "ls", "demo", "--index", server.index_url, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "cp312-cp312-manylinux_2_28_x86_64" in out and "…" not in out
