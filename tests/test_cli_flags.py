"""What the commands flag and where they put it: help examples that name real files, inputs that describe
different environments, and the verdict before the details."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.ui.cli_help import HELP

ROOT = Path(__file__).parents[1]
MATRIX = ROOT / "matrices" / "cu130-sm120-cp312-manylinux_2_28_x86_64.json"


def test_every_help_example_names_matrix_files_that_exist() -> None:
    # GIVEN each command's help example; WHEN it names a file under matrices/
    named = {m for example, _codes in HELP.values() for m in re.findall(r"matrices/\S+", example)}
    # THEN that file is in the repository
    assert named
    assert sorted(m for m in named if not (ROOT / m).is_file()) == []


def _copy_matrix(path: Path, **target: str) -> Path:
    doc = json.loads(MATRIX.read_text())
    doc["target"].update(target)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def test_matrix_diff_flags_matrices_of_different_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the committed matrix and a copy saying it is for CUDA 12.9
    new_key = json.loads(MATRIX.read_text())["target"]["key"]
    old = _copy_matrix(tmp_path / "old.json", key=new_key.replace("cu13.0", "cu12.9"))
    # WHEN they are diffed
    main(["matrix", "diff", str(old), str(MATRIX), "--json"])
    out, err = capsys.readouterr()
    # THEN a warning on stderr says the targets differ, and the JSON names both
    assert "abiprobe: warning: the matrices are of different targets: OLD is for cu12.9-" in err
    doc = json.loads(out)
    assert (doc["old_target"], doc["target"]) == (new_key.replace("cu13.0", "cu12.9"), new_key)


def test_report_flags_a_snapshot_and_a_matrix_of_different_pythons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a snapshot of this interpreter and a matrix for CPython 3.9
    snap = tmp_path / "before.json"
    assert main(["snapshot", "--python", sys.executable, "-o", str(snap)]) == 0
    matrix = _copy_matrix(tmp_path / "m.json", python="cp39")
    capsys.readouterr()
    # WHEN the ticket is written
    assert main(["report", "--snapshot", str(snap), "--matrix", str(matrix)]) == 0
    out, err = capsys.readouterr()
    # THEN stderr and the ticket both say the Pythons differ
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"abiprobe: warning: the snapshot is of Python {here}, the matrix is for cp39" in err
    assert f"> ⚠️ The snapshot is of Python {here}, the matrix is for cp39" in out


def test_check_prints_its_verdict_line_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a pure wheel; WHEN check judges it alone
    wheel = build_wheel(tmp_path, "demo", "1.0", {"demo/__init__.py": b""}, tag="py3-none-any")
    main(["check", str(wheel), "--no-deps", "--cache-dir", str(tmp_path / "c")])
    first = capsys.readouterr().out.splitlines()[0]
    # THEN the first line is the verdict with each check's worst status
    assert re.match(r"(OK|WARN|BLOCKED|UNKNOWN|FAIL) ", first)
    assert "metadata ok" in first
