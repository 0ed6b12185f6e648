"""`solve` writes a PEP 751 pylock beside the requirements lock; pip and uv install it (--dry-run) from the
local index server, and packaging.pylock reads it as valid."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_argv, solve_stack
from support.stacks import PY_TAG
from support.tools import venv_tool

from abiprobe.cli import main
from abiprobe.installers.toml import toml_loads

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
UPLOADED = "2025-06-01T12:00:00Z"


@dataclass(frozen=True)
class Solved:
    server: IndexServer
    pylock: Path
    doc: dict[str, Any]


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Solved]:
    root = tmp_path_factory.mktemp("pylock")
    stack = solve_stack(root / "stack")
    with IndexServer() as server:
        serve(server, stack, upload_time=UPLOADED)
        assert main(solve_argv(server.index_url, root / "cache", root / "m")) == 0
        path = root / "m" / f"pylock.{NAME}.toml"
        yield Solved(server, path, toml_loads(path.read_text()))


def test_every_package_carries_url_size_sha256_upload_time_and_index(solved: Solved) -> None:
    packages = solved.doc["packages"]
    assert {p["name"] for p in packages} >= {"torch", "sglang-kernel"}
    for package in packages:
        (wheel,) = package["wheels"]
        served = next(f for f in solved.server._state.files if f.filename == wheel["name"])
        assert wheel["url"] == solved.server.file_url(served.filename)
        assert (wheel["size"], wheel["hashes"]) == (served.size, {"sha256": served.sha256})
        assert wheel["upload-time"].isoformat() == "2025-06-01T12:00:00+00:00"
        assert package["index"] == solved.server.index_url


def test_tool_table_names_the_target_and_the_verdicts_that_chose_the_set(solved: Solved) -> None:
    tool = solved.doc["tool"]["abiprobe"]
    assert tool["target"]["key"] == f"cu13.0-sm_120-{PY_TAG}-manylinux_2_28_x86_64"
    assert (tool["chosen"]["torch"], tool["chosen"]["kernel"]) == ("torch==2.9.0", "sglang-kernel==0.4.0")
    assert tool["status"] == "ok"
    assert tool["verdicts"] and all(v["status"] == "ok" for v in tool["verdicts"])


def test_packaging_reads_it_as_a_valid_pylock(solved: Solved) -> None:
    pylock = pytest.importorskip("packaging.pylock")
    lock = pylock.Pylock.from_dict(solved.doc)
    assert pylock.is_valid_pylock_path(solved.pylock)
    assert str(lock.lock_version) == "1.0"


def _pip_26() -> bool:
    out = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True).stdout
    return int(out.split()[1].split(".")[0]) >= 26


@pytest.mark.skipif(not _pip_26(), reason="pip installs pylock.toml from 26.1 on")
def test_pip_installs_it(solved: Solved, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-cache-dir", "-r", str(solved.pylock)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Would install" in proc.stdout and "torch-2.9.0" in proc.stdout


def test_uv_installs_it(solved: Solved, tmp_path: Path) -> None:
    env = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")}
    proc = subprocess.run(
        [venv_tool("uv"), "pip", "install", "--dry-run", "--python", sys.executable, "-r", solved.pylock],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "torch==2.9.0" in proc.stderr
