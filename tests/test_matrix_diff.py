"""``matrix diff``: two real solves a day apart (a new kernel release, a re-uploaded kernel that lost its
sm_120 code), and hand-made documents for the exit-code rules."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.indexserver import IndexServer
from support.schemas import assert_valid
from support.solve_stacks import SolveStack, _kernel, solve_argv, solve_stack
from support.stacks import PY_TAG

from abiprobe.cli import main
from abiprobe.report.diff import diff_matrices, render_markdown

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
K040 = "sglang-kernel==0.4.0"
K042_WHEEL = "sglang_kernel-0.4.2-cp310-abi3-manylinux_2_28_x86_64.whl"


@dataclass(frozen=True)
class Days:
    old: Path
    new: Path
    rebuilt: Path
    files_fetched_day2: frozenset[str]


def solve_day(server: IndexServer, cache: Path, out: Path) -> Path:
    rc = main(solve_argv(server.index_url, cache, out, "--json"))
    assert rc in (0, 1)
    return out / f"{NAME}.json"


def rebuilt_k040(stack: SolveStack, out: Path) -> Path:
    """sglang-kernel 0.4.0 under the same filename, rebuilt with only sm_100a code."""
    c10 = stack.root / "t29" / "torch-2.9.0" / "libc10.so"
    cudart = stack.root / "runtime" / "libcudart.so.13"
    return _kernel(
        out / "wheels",
        out,
        "sglang-kernel",
        "0.4.0",
        c10,
        cudart,
        unsigned=True,
        requires=["torch==2.9.0"],
        gencode="arch=compute_100a,code=sm_100a",
    )


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> Days:
    stack = solve_stack(tmp_path_factory.mktemp("solve-stack"))
    root = tmp_path_factory.mktemp("days")
    cache = root / "cache"
    rebuilt = rebuilt_k040(stack, root / "rebuilt")
    assert rebuilt.name == stack.wheels["k040"].name
    with IndexServer() as day1:
        for key, path in sorted(stack.wheels.items()):
            if key != "k042_sm100a":
                day1.add_wheel(path, **({"yanked": "broken"} if key in stack.yanked else {}))
        old = solve_day(day1, cache, root / "day1")
    with IndexServer() as day2:
        for key, path in sorted(stack.wheels.items()):
            options = {"yanked": "broken"} if key in stack.yanked else {}
            day2.add_wheel(rebuilt if key == "k040" else path, **options)
        new = solve_day(day2, cache, root / "day2")
        fetched = frozenset(p.rsplit("/", 1)[-1] for p in day2.requests if p.endswith(".whl"))
    return Days(old, new, rebuilt, fetched)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_day_two_inspects_only_the_new_and_the_reuploaded_wheel(days: Days) -> None:
    # GIVEN a shared wheel_index_cache: unchanged wheels are answered from their cached facts
    assert days.files_fetched_day2 == {days.rebuilt.name, K042_WHEEL}


def test_diff_lists_the_new_wheel(days: Days) -> None:
    d = diff_matrices(load(days.old), load(days.new))
    assert [w.filename for w in d.new_wheels] == [K042_WHEEL]
    assert d.removed_wheels == ()


def test_diff_names_the_wheel_reuploaded_with_another_hash(days: Days) -> None:
    d = diff_matrices(load(days.old), load(days.new))
    ((before, after),) = d.changed_wheels
    assert before.filename == after.filename == days.rebuilt.name
    assert before.sha256 != after.sha256


def test_diff_reports_the_ok_to_fail_flip_with_its_reason(days: Days) -> None:
    d = diff_matrices(load(days.old), load(days.new))
    (flip,) = d.flips
    assert (flip.row, flip.col, flip.before, flip.after) == ("torch==2.9.0", K040, "ok", "fail")
    assert flip.checks == (("gpu_arch", "ok", "fail"),)
    assert flip.reason == (
        "gpu_arch fail: sgl_kernel/common_ops.abi3.so: nothing runs on 12.0: carries sm_100a; "
        "sglang-kernel 0.4.0: torch range agrees (torch==2.9.0; bytes load with torch 2.9.0)"
    )
    assert flip.regression


def test_diff_exit_code_says_a_regression_happened(days: Days, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "diff", str(days.old), str(days.new), "--json"]) == 12
    out = assert_valid(json.loads(capsys.readouterr().out), "matrix-diff")
    assert (out["exit_code"], out["flips"][0]["regression"]) == (12, True)


def test_diff_markdown_is_a_job_summary(days: Days) -> None:
    text = render_markdown(diff_matrices(load(days.old), load(days.new)))
    assert "**1 regression(s)** (ok → fail), 1 verdict(s) flipped" in text
    assert f"| torch==2.9.0 + {K040} | ok | fail | gpu_arch ok→fail |" in text
    assert f"- `{K042_WHEEL}` (kernel)" in text


def test_diff_of_a_matrix_with_itself_is_empty(days: Days, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "diff", str(days.old), str(days.old), "--format", "md"]) == 0
    assert "No change." in capsys.readouterr().out


def test_a_fail_to_ok_flip_is_not_a_regression(days: Days) -> None:
    old = load(days.new)
    new = copy.deepcopy(old)
    cell = next(c for c in new["cells"] if (c["row"], c["col"]) == ("torch==2.9.0", K040))
    cell["status"], cell["checks"]["gpu_arch"], cell["explanation"] = "ok", "ok", "all checks pass"
    d = diff_matrices(old, new)
    assert [(f.before, f.after, f.regression) for f in d.flips] == [("fail", "ok", False)]
    assert d.exit_code == 4


def test_new_cells_are_listed_not_flipped(days: Days) -> None:
    d = diff_matrices(load(days.old), load(days.new))
    assert {(r, c) for r, c, _ in d.new_cells} == {
        ("torch==2.9.0", "sglang-kernel==0.4.2"),
        ("torch==2.8.0", "sglang-kernel==0.4.2"),
    }
