"""The tests find their tools through support/tools.py: a bare PATH lookup elsewhere would let a tool
installed by hand on one machine hide a missing install step, and a skip would hide it under CI."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).parent
# cbuild resolves cc/gcc once for the C fixtures (a missing compiler errors, it never skips); live tests
# run by hand, outside CI
ALLOWED = {"support/tools.py", "support/cbuild.py"}
BARE_LOOKUP = re.compile(r"shutil\.which\(")


def offending_files(root: Path = TESTS) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in ALLOWED or rel.endswith("_live.py") or rel == Path(__file__).name:
            continue
        if BARE_LOOKUP.search(path.read_text(encoding="utf-8")):
            found.append(rel)
    return found


def test_no_test_looks_a_tool_up_on_path_by_itself() -> None:
    assert offending_files() == []


def test_the_scan_finds_a_bare_lookup(tmp_path: Path) -> None:
    # GIVEN a tests tree with one file that finds uv by bare name, and an allowed helper that does too
    (tmp_path / "support").mkdir()
    (tmp_path / "support" / "tools.py").write_text('shutil.which("chromium")\n')
    (tmp_path / "test_x.py").write_text('@pytest.mark.skipif(shutil.which("uv") is None, reason="no uv")\n')
    # THEN only the test file is reported
    assert offending_files(tmp_path) == ["test_x.py"]
