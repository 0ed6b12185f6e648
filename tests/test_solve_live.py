"""The main job against the real indexes, on a copy of the committed cache; run by hand (``-m live -s``).

A fresh machine has only the committed ``wheel_index_cache/``: the solve refreshes the index pages and
should need no wheel bytes unless an index published something new (then it reads what it must).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from abiprobe.cli import main
from abiprobe.report.matrix_json import matrix_schema

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[1]
KEY = "cu130-sm120-cp312-manylinux_2_28_x86_64"
ARGV = [
    "solve",
    "--cuda",
    "13.0",
    "--arch",
    "sm120",
    "--python",
    "3.12",
    "--platform",
    "manylinux_2_28_x86_64",
]


def test_live_solve_from_the_committed_cache_chooses_a_set_and_says_which_indexes_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "wheel_index_cache"
    shutil.copytree(REPO / "wheel_index_cache", cache)
    rc = main([*ARGV, "--cache-dir", str(cache), "--out-dir", str(tmp_path / "out")])
    doc = json.loads((tmp_path / "out" / f"{KEY}.json").read_text())
    committed = json.loads((REPO / "matrices" / f"{KEY}.json").read_text())
    jsonschema.validate(doc, matrix_schema())
    answered = {i["url"]: i["answered"] for i in doc["indexes"]}
    print(f"\nrc {rc}; chosen {doc['chosen']}; committed {committed['chosen']}; indexes {answered}")
    # exit 3 exactly when some index could not be read; the answer is then marked incomplete
    assert rc == (0 if all(answered.values()) else 3)
    assert doc["complete"] == all(answered.values())
    assert any(answered.values()), "no index answered: nothing was checked"
    assert doc["chosen"], "no set passed"
    lock = (tmp_path / "out" / f"{KEY}.lock.txt").read_text()
    assert all(f"{pin.split('==')[0]}==" in lock for pin in doc["chosen"].values())
