"""A solve whose index serves some wheels badly: those wheels are named, the rest is solved, nothing is
half-stored, and no traceback reaches the user. Several wheels are read at once, so the faults land in
concurrent readers too."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_argv, solve_stack
from support.stacks import PY_TAG

from abiprobe.cli import main
from abiprobe.store.cache import Cache

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"


def test_unreadable_wheels_are_named_and_the_rest_of_the_stack_is_solved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = solve_stack(tmp_path / "stack")
    gone, cut = stack.wheels["k042_sm100a"], stack.wheels["k030"]
    cache = tmp_path / "cache"
    with IndexServer() as server:
        serve(server, stack)
        # GIVEN one kernel wheel that answers 404 and one whose body is always cut short
        server.fail(match=gone.name, status=404)
        server.fail(match=cut.name, truncate_after=2000)
        # WHEN the stack is solved (in its own process: only abiprobe's output is read)
        argv = solve_argv(server.index_url, cache, tmp_path / "out")
        proc = subprocess.run([sys.executable, "-m", "abiprobe", *argv], capture_output=True, text=True)
    # THEN the answer is marked incomplete (3), with each unreadable wheel named in one problem line
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "out" / f"{NAME}.json").read_text())
    assert any(gone.name in p and "404" in p for p in doc["problems"])
    assert any(cut.name in p for p in doc["problems"])
    # AND the rest is still solved: the newest set that could be checked, not the unread 0.4.2
    assert doc["chosen"]["kernel"] == "sglang-kernel==0.4.0"
    (miss,) = [m for m in doc["near_misses"] if m["id"] == "sglang-kernel==0.4.2"]
    assert "could not be read" in miss["reason"]
    # AND nothing of the two wheels was stored, and every entry that was stored is whole
    store = Cache(cache)
    for wheel in (gone, cut):
        sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
        assert store.load_facts(sha, allow_partial=True, allow_unverified=True) is None
        assert store.load_summary(sha, allow_partial=True, allow_unverified=True) is None
    assert main(["cache", "verify", "--cache-dir", str(cache)]) == 0
    capsys.readouterr()


def test_a_kernel_whose_host_drops_every_connection_is_unknown_in_every_cell(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = solve_stack(tmp_path / "stack")
    dropped = stack.wheels["k040"]
    with IndexServer() as server:
        serve(server, stack)
        # GIVEN the newest passing kernel listed, but its wheel host resets every connection
        server.fail(match=dropped.name, reset_after=0)
        main(solve_argv(server.index_url, tmp_path / "cache", tmp_path / "out", "--no-write", "--json"))
    doc = json.loads(capsys.readouterr().out)
    cells = [c for c in doc["cells"] if c["col"] == "sglang-kernel==0.4.0"]
    # THEN each of its cells is unknown (never ok or warn), and so is every check that reads its bytes
    assert [c["status"] for c in cells] != [] and {c["status"] for c in cells} <= {"unknown", "fail"}
    row = next(c for c in cells if c["row"] == "torch==2.9.0")
    assert row["status"] == "unknown"
    byte_checks = (
        "metadata",
        "requires",
        "files",
        "sonames",
        "symbols",
        "symbol_versions",
        "driver",
        "gpu_arch",
    )
    assert {row["checks"][c] for c in byte_checks} == {"unknown"}
    # AND it is not chosen, and no near miss or conflict says it passes
    assert doc["chosen"] is None or doc["chosen"]["kernel"] != "sglang-kernel==0.4.0"
    said = json.dumps(doc["near_misses"]) + json.dumps(doc["conflicts"])
    assert "sglang-kernel==0.4.0" in said and "passes static checks with 1" not in said
