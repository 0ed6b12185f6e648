"""CLI conventions every command keeps: help with defaults, an example and exit codes; -q / -v; results on
stdout, warnings and errors on stderr."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.wheelbuild import build_wheel

from abiprobe.cli import build_parser, main
from abiprobe.model.target import Target
from abiprobe.ui.cli_help import subparsers


def leaf_commands(
    parser: argparse.ArgumentParser, path: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    children = subparsers(parser)
    if path and not children:
        yield path, parser
    for name, child in children.items():
        yield from leaf_commands(child, f"{path} {name}".strip())


LEAVES = dict(leaf_commands(build_parser()))


@pytest.mark.parametrize("command", sorted(LEAVES))
def test_every_command_has_help_for_each_option_an_example_and_its_exit_codes(command: str) -> None:
    parser = LEAVES[command]
    text = parser.format_help()
    assert "example:\n  abiprobe " in text
    assert re.search(r"exit (codes|status)", text)
    for action in parser._actions:
        assert action.help, f"{command}: {action.option_strings or action.dest} has no help"


def test_an_option_default_is_shown() -> None:
    text = " ".join(LEAVES["solve"].format_help().split())
    assert "--cuda CUDA target CUDA version (13.0, cu130) (default: 13.0)" in text
    assert f"(default: this host's, {Target.from_host().platform})" in text


@pytest.fixture
def server(tmp_path: Path) -> Iterator[IndexServer]:
    wheel = build_wheel(tmp_path / "w", "demo", "1.0", {"demo/__init__.py": b""})
    with IndexServer() as srv:
        srv.add_wheel(wheel)
        yield srv


def test_verbose_logs_each_request_with_status_and_bytes(
    server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", "ls", "demo", "--index", server.index_url, "--no-cache", "-v"]) == 0
    err = capsys.readouterr().err
    served = server.bytes_served["/simple/demo/"]
    assert f"abiprobe: GET {server.index_url}demo/ -> 200, {served} B in " in err


def test_warnings_go_to_stderr_and_qq_silences_them(
    server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a second index that does not answer
    argv = ["index", "ls", "demo", "--index", server.index_url, "--index", "http://127.0.0.1:9/simple/"]
    assert main([*argv, "--no-cache", "--strategy", "best-match"]) == 0
    out, err = capsys.readouterr()
    # THEN the result is on stdout and the dead index is a warning on stderr
    assert "1.0" in out and "127.0.0.1:9" not in out
    assert "abiprobe: warning: index 127.0.0.1:9/simple: failed" in err
    assert main([*argv, "--no-cache", "--strategy", "best-match", "-qq"]) == 0
    assert "warning" not in capsys.readouterr().err


# files of a throwaway venv, never a user's output; runner.py runs inside that venv without abiprobe and
# writes its result through a .part file and os.replace itself; layers.py writes a kept layer's manifest
# inside the build folder, which is then moved into place whole
SCRATCH = {"probe/stub.py", "probe/execute.py", "probe/runner.py", "probe/layers.py"}


def test_no_output_file_is_written_in_place() -> None:
    # every file a command writes for a user goes through store.primitives.write_text_atomic / atomic_write
    root = Path(__file__).parents[1] / "abiprobe"
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if str(path.relative_to(root)) not in SCRATCH
        and re.search(r"\.write_text\(|\.write_bytes\(|open\([^)]*[\"']w[\"']", path.read_text())
    ]
    assert offenders == []


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    from abiprobe.store.primitives import write_text_atomic

    target = tmp_path / "m.json"
    write_text_atomic(target, "old\n")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(target, "new \udc80\n")
    (tmp_path / "d.json").mkdir()
    with pytest.raises(OSError):
        write_text_atomic(tmp_path / "d.json", "x")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json", "m.json"]


# the schema of each command's --json output (abiprobe/schemas/<name>.schema.json)
JSON_SCHEMAS = {
    "solve": "matrix", "inspect": "inspect", "check": "check", "diff": "torch-diff", "probe": "probe",
    "index ls": "index-ls", "config": "config", "cache info": "cache", "cache prune": "cache",
    "cache verify": "cache", "cache publish": "cache", "matrix show": "matrix", "matrix diff": "matrix-diff",
    "matrix merge": "matrix-merge", "report": "report", "snapshot": "snapshot",
    "restore-plan": "restore-plan",
}  # fmt: skip


def test_every_json_output_has_a_schema() -> None:
    with_json = {c for c, p in LEAVES.items() if any("--json" in a.option_strings for a in p._actions)}
    assert with_json == set(JSON_SCHEMAS)
    schemas = Path(__file__).parents[1] / "abiprobe" / "schemas"
    assert all((schemas / f"{name}.schema.json").is_file() for name in JSON_SCHEMAS.values())


def test_print_all_keeps_the_order_and_sends_warnings_and_stderr_parts_to_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from abiprobe import log
    from abiprobe.report.lines import Line, Part, Stderr, Warn
    from abiprobe.ui.console import print_all

    # GIVEN a renderer's parts: markup, a warning, a part for stderr, and a line whose markup is not read
    parts: list[Part] = [
        "[bold]a[/bold]",
        Warn("index x: failed"),
        Stderr("[red]problem[/] y"),
        Line("[b]z", markup=False),
    ]
    # WHEN they are printed at the default verbosity (an earlier -q run here may have left it lower)
    monkeypatch.setattr(log, "_level", 0)
    print_all(parts)
    captured = capsys.readouterr()
    # THEN stdout has the markup read and the plain line as written; stderr the warning, then the part
    assert captured.out == "a\n[b]z\n"
    assert captured.err == "abiprobe: warning: index x: failed\nproblem y\n"


DEAD_INDEX = "http://127.0.0.1:9/simple/"  # nothing listens on the discard port


def test_an_index_that_does_not_answer_is_one_error_line_under_qq(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN only an index that does not answer; WHEN a project is listed with -qq
    rc = main(["index", "ls", "demo", "--index", DEAD_INDEX, "--no-cache", "-qq"])
    err = capsys.readouterr().err
    # THEN the incomplete answer (exit 3) is still said, in one line on stderr, naming the index
    assert rc == 3
    assert err.splitlines() == [
        "abiprobe: error: the answer is incomplete: 1 index did not answer in full (127.0.0.1:9/simple)"
    ]


def test_a_wheel_that_cannot_be_read_is_named_with_its_host_under_qq(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an index listing demo 1.0 on a host that does not answer
    name = "demo-1.0-py3-none-any.whl"
    with IndexServer() as srv:
        srv.add_page(
            "/dead/demo/", f'<a href="http://127.0.0.1:9/f/{name}#sha256={"0" * 64}">{name}</a>'.encode()
        )
        # WHEN check judges demo==1.0 with -qq
        argv = ["check", "demo==1.0", "--no-deps", "--index", srv.url + "/dead/", "-qq"]
        rc = main([*argv, "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err.splitlines()
    # THEN it exits 3 with one error line naming the wheel under its host
    assert rc == 3
    assert [line for line in err if line.startswith("abiprobe: error:")] == [
        f"abiprobe: error: the answer is incomplete: 1 wheel could not be read (127.0.0.1:9: 1: {name}); "
        "reasons in the verdicts above"
    ]
