"""The closure resolver finishes trees that need backtracking as pip does (its round limit, its order:
backtrack causes first), and a real conflict is one line naming the requirements that clash."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.indexserver import IndexServer
from support.stacks import PLATFORM, PY_TAG
from support.wheelbuild import build_wheel

from abiprobe.cli import main

PURE = "py3-none-any"
VERSIONS = 150
FREE = 20  # the old order re-pinned these on each aaa it tried: over 3,000 rounds, past its 2,000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    """``app`` needs ``aaa`` and ``bbb``; every ``aaa`` needs ``aap0``..``aap19`` and all but 1.0 need
    ``zzz>=2``, ``bbb`` needs ``zzz<2``;
    ``clash`` needs ``left`` (``shared>=2``) and ``right`` (``shared<2``)."""
    out = tmp_path_factory.mktemp("tree")
    wheels = [build_wheel(out, "app", "1.0", {"app.py": b""}, tag=PURE, requires_dist=["aaa", "bbb"])]
    for v in range(1, VERSIONS + 1):
        reqs = [f"aap{i}" for i in range(FREE)] + ([] if v == 1 else ["zzz>=2"])
        wheels.append(build_wheel(out, "aaa", f"{v}.0", {"aaa.py": b""}, tag=PURE, requires_dist=reqs))
    wheels += [build_wheel(out, f"aap{i}", "1.0", {f"aap{i}.py": b""}, tag=PURE) for i in range(FREE)]
    wheels.append(build_wheel(out, "bbb", "1.0", {"bbb.py": b""}, tag=PURE, requires_dist=["zzz<2"]))
    wheels += [build_wheel(out, "zzz", v, {"zzz.py": b""}, tag=PURE) for v in ("1.0", "2.0")]
    both = ["left", "right"]
    wheels.append(build_wheel(out, "clash", "1.0", {"clash.py": b""}, tag=PURE, requires_dist=both))
    wheels.append(build_wheel(out, "left", "1.0", {"left.py": b""}, tag=PURE, requires_dist=["shared>=2"]))
    wheels.append(build_wheel(out, "right", "1.0", {"right.py": b""}, tag=PURE, requires_dist=["shared<2"]))
    wheels += [build_wheel(out, "shared", v, {"shared.py": b""}, tag=PURE) for v in ("1.0", "2.0")]
    with IndexServer() as srv:
        for w in wheels:
            srv.add_wheel(w)
        yield srv


def _argv(server: IndexServer, tmp: Path, item: str) -> list[str]:
    target = ["--python", PY_TAG, "--platform", PLATFORM]
    return ["check", item, *target, "--index-url", server.index_url, "--cache-dir", str(tmp / "cache")]


def test_a_tree_that_needs_backtracking_past_the_old_round_limit_resolves(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN app, whose newest aaa versions all clash with bbb's zzz<2 (only aaa 1.0 fits)
    # WHEN its install closure is checked
    rc = main([*_argv(server, tmp_path, "app==1.0"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    # THEN it resolves as pip does: aaa 1.0, bbb 1.0, zzz 1.0
    assert doc["install"]["resolved"], doc["install"]["error"]
    added = {a["wheel"] for a in doc["install"]["added"] if not a["wheel"].startswith("aap")}
    assert added == {"aaa 1.0", "bbb 1.0", "zzz 1.0"}
    assert rc == 0


def test_a_real_conflict_is_one_line_naming_both_requirements(
    server: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN clash, whose two requirements need shared>=2 and shared<2
    # WHEN it is checked
    rc = main(_argv(server, tmp_path, "clash==1.0"))
    captured = capsys.readouterr()
    # THEN one line names both sides of the clash, no traceback, and the check fails
    lines = [line for line in captured.out.splitlines() if "cannot be completed" in line]
    assert len(lines) == 1
    assert "left 1.0 requires shared>=2" in lines[0] and "right 1.0 requires shared<2" in lines[0]
    assert "Traceback" not in captured.out + captured.err
    assert rc == 64
