"""``solve --all-versions`` over many releases: every cell judged, the cost counted in pairs."""

from __future__ import annotations

import json
from pathlib import Path

from packaging.version import Version
from support.indexserver import IndexServer
from support.solve_stacks import build_history_stack, solve_argv

from abiprobe.cli import main

T, K, F = 3, 4, 5


def _matrix(out: Path) -> dict[str, object]:
    doc: dict[str, object] = json.loads(next(out.glob("*.json")).read_text())
    return doc


def test_all_versions_judges_every_cell_from_pairs_and_a_warm_run_reads_no_wheel(tmp_path: Path) -> None:
    # GIVEN 3 torch x 4 kernel x 5 flashinfer releases (two torch ABIs; each kernel pins one torch)
    stack = build_history_stack(tmp_path / "build", T, K, F)
    with IndexServer() as server:
        for wheel in stack.wheels:
            server.add_wheel(wheel)
        # WHEN every release is solved, then solved again
        rc = main(solve_argv(server.index_url, tmp_path / "cache", tmp_path / "m1", "--all-versions"))
        server.reset_counts()
        rc2 = main(solve_argv(server.index_url, tmp_path / "cache", tmp_path / "m2", "--all-versions"))
        warm_paths = set(server.requests)
    assert rc == 0 and rc2 == 0
    doc = _matrix(tmp_path / "m1")
    # THEN each torch x kernel cell is there, with flashinfer chosen per cell
    cells = doc["cells"]
    assert isinstance(cells, list) and len(cells) == T * K
    abi = {t: i % 2 for i, t in enumerate(stack.torch)}
    for cell in cells:
        torch = cell["row"].removeprefix("torch==")
        kernel = cell["col"].removeprefix("sglang-kernel==")
        pinned = stack.kernels[kernel]
        # loads and allowed when the kernel pins this torch; loads but forbidden by its pin when only the
        # ABI agrees within the minor it was built against; a signature mismatch, or another minor (a
        # C++-ABI kernel is bound to its build torch's minor), otherwise
        same_minor = Version(pinned).release[:2] == Version(torch).release[:2]
        expected = (
            "ok" if pinned == torch else "blocked" if abi[pinned] == abi[torch] and same_minor else "fail"
        )
        assert cell["status"] == expected, (torch, kernel, cell["explanation"])
        if expected == "fail":
            assert cell["checks"]["symbols"] == "fail"
        fits = [v for v, floor in stack.flashinfer.items() if Version(floor) <= Version(torch)]
        chosen = cell["choices"][0]["chosen"]
        assert chosen == f"flashinfer-python=={max(fits, key=Version)}", (torch, chosen)
    # AND the analyses are the pairs (each torch alone, with each kernel, with each flashinfer), not T*K*F
    stats = doc["stats"]
    assert isinstance(stats, dict)
    assert stats["analyses"] == T + T * K + T * F
    assert stats["naive_analyses"] == T * K * F
    assert _matrix(tmp_path / "m2")["chosen"] == doc["chosen"]
    assert doc["chosen"]["torch"] == f"torch=={stack.torch[-1]}"
    # AND the warm run asked for no wheel bytes and no metadata: its pages were fresh
    assert not [p for p in warm_paths if p.endswith((".whl", ".metadata"))], warm_paths
