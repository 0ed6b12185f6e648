"""One set of target and index options on every command that looks wheels up, checked the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.wheelbuild import build_wheel

from abiprobe.cli import build_parser, main
from abiprobe.ui.cli_help import subparsers

LOOKUPS = ("solve", "check", "inspect", "probe", "diff", "index ls")
SHARED = {
    "--index",
    "--extra-index",
    "--index-strategy",
    "--offline",
    "--cache-dir",
    "--python",
    "--platform",
}


def _command(path: str) -> object:
    parser = build_parser()
    for word in path.split():
        parser = subparsers(parser)[word]
    return parser


@pytest.mark.parametrize("command", LOOKUPS)
def test_every_command_that_looks_wheels_up_takes_the_shared_options(command: str) -> None:
    # GIVEN a command that looks wheels up; WHEN its options are listed
    parser = _command(command)
    options = {o for a in parser._actions for o in a.option_strings}  # type: ignore[attr-defined]
    # THEN it takes the shared target and index options, and the old spelling --index-url still parses
    if command != "index ls":
        assert options >= SHARED
    else:
        assert options >= SHARED - {"--python", "--platform"}
    assert "--index-url" in options
    assert "--index-url" not in parser.format_help()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "--cuda", "99", "--offline", "--no-write"],
        ["check", "demo==1.0", "--cuda", "99", "--offline"],
        ["config", "--cuda", "12.7"],
    ],
)
def test_a_cuda_version_abiprobe_has_no_data_for_is_a_one_line_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN a command is given a CUDA version that is no release abiprobe knows
    rc = main(argv)
    err = capsys.readouterr().err
    # THEN it exits 2 with one line naming the value and the versions it knows
    assert rc == 2
    assert err.count("\n") == 1
    assert err.startswith(f"abiprobe: error: --cuda {argv[argv.index('--cuda') + 1]}: not a CUDA release")
    assert "13.0" in err and "Traceback" not in err


def test_inspect_looks_a_wheel_up_for_the_platform_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an index with demo 1.0 for x86_64 and for aarch64
    files = {"demo/__init__.py": b""}
    with IndexServer() as srv:
        for tag in ("py3-none-manylinux_2_28_x86_64", "py3-none-manylinux_2_28_aarch64"):
            srv.add_wheel(build_wheel(tmp_path / tag, "demo", "1.0", files, tag=tag))
        # WHEN inspect is asked for demo==1.0 on aarch64
        argv = ["inspect", "demo==1.0", "--platform", "manylinux_2_28_aarch64", "--json"]
        rc = main([*argv, "--index", srv.index_url, "--cache-dir", str(tmp_path / "c")])
    # THEN it reads the aarch64 wheel
    assert rc == 0
    (source,) = json.loads(capsys.readouterr().out)["sources"]
    assert source["filename"] == "demo-1.0-py3-none-manylinux_2_28_aarch64.whl"


def test_diff_looks_torch_up_for_the_python_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN an index with torch 2.9.0 for CPython 3.12 only
    wheel = build_wheel(tmp_path, "torch", "2.9.0", {"torch/__init__.py": b""})
    with IndexServer() as srv:
        srv.add_wheel(wheel)
        # WHEN diff is asked about torch 2.9.0 for Python 3.11
        argv = ["diff", "torch==2.9.0", "torch==2.9.0", "--python", "3.11", "--no-kernels"]
        rc = main([*argv, "--index", srv.index_url, "--cache-dir", str(tmp_path / "c")])
    # THEN the lookup is for cp311, where no wheel installs: a usage error saying so
    assert rc == 2
    assert "no wheel of that version installs on cp311" in capsys.readouterr().err
