"""The upgrade ticket: a venv on torch 2.8.0 + sgl-kernel 0.3.0 (snapshot), a fixture solve, a probe."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from support.indexserver import IndexServer
from support.schemas import assert_valid
from support.solve_stacks import SolveStack, serve, solve_argv, solve_stack
from support.stacks import PY_TAG
from support.venvs import make_venv, pip_install

from abiprobe.cli import main
from abiprobe.probe import ProbeResult
from abiprobe.probe.jobs import result_document
from abiprobe.report.ticket import lock_wheels

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
JOB = "sm120-torch-2.9.0-sglang-kernel-0.4.0-flashinfer-python-0.5.3"


@dataclass(frozen=True)
class Inputs:
    root: Path
    snapshot: Path
    matrix: Path
    probe: Path
    ticket: dict[str, Any]
    markdown: str
    html: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("solve-stack"))


@pytest.fixture(scope="module")
def inputs(stack: SolveStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inputs]:
    root = tmp_path_factory.mktemp("report")
    py = make_venv(root / "venv", with_pip=False)
    pip_install(py, stack.wheels["torch_28"], stack.wheels["k030"])
    snapshot = root / "snapshot.json"
    assert (
        main(
            [
                "snapshot",
                "--python",
                str(py),
                "--wheels-dir",
                str(stack.wheels["torch_28"].parent),
                "-o",
                str(snapshot),
            ]
        )
        == 0
    )
    with IndexServer() as server:
        serve(server, stack)
        assert main(solve_argv(server.index_url, root / "cache", root / "m", "--json")) == 0
    matrix = root / "m" / f"{NAME}.json"
    cell = {"row": "torch==2.9.0", "col": "sglang-kernel==0.4.0"}
    job = {"id": JOB, "name": JOB, "matrix": "k", "cell": cell, "target": {}}
    result = ProbeResult(JOB, "ok", "", stubbed=True)
    probe = root / "probe.json"
    probe.write_text(
        json.dumps(result_document(job, result.to_json(), result.to_verdicts(), {"hostname": "gpu-box-7"}))
    )
    base = ["report", "--snapshot", str(snapshot), "--matrix", str(matrix), "--probe", str(probe)]
    base += ["--cache-dir", str(root / "cache")]
    assert main([*base, "--json", "-o", str(root / "t.json")]) == 0
    assert main([*base, "-o", str(root / "t.md")]) == 0
    assert main([*base, "--format", "html", "-o", str(root / "t.html")]) == 0
    yield Inputs(
        root,
        snapshot,
        matrix,
        probe,
        assert_valid(json.loads((root / "t.json").read_text()), "report"),
        (root / "t.md").read_text(),
        (root / "t.html").read_text(),
    )


def change(ticket: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in ticket["changes"] if c["name"] == name)


def test_torch_is_an_upgrade_from_the_snapshot_version(inputs: Inputs) -> None:
    c = change(inputs.ticket, "torch")
    assert (c["from"], c["to"], c["change"], c["role"]) == ("2.8.0", "2.9.0", "upgrade", "torch")


def test_the_renamed_kernel_is_replaced_not_just_removed(inputs: Inputs) -> None:
    old = change(inputs.ticket, "sgl-kernel")
    assert (old["from"], old["to"], old["change"], old["note"]) == (
        "0.3.0",
        None,
        "removed",
        "replaced by sglang-kernel 0.4.0",
    )
    assert change(inputs.ticket, "sglang-kernel")["change"] == "new"


def test_runtime_wheels_from_the_lock_file_are_changes_too(inputs: Inputs) -> None:
    c = change(inputs.ticket, "nvidia-cuda-runtime")
    assert (c["to"], c["change"], c["role"]) == ("13.0.96", "new", "runtime")


def test_chosen_set_comes_with_its_checks(inputs: Inputs) -> None:
    ch = inputs.ticket["chosen"]
    assert ch["set"]["kernel"] == "sglang-kernel==0.4.0"
    assert (ch["status"], ch["checks"]["gpu_arch"]) == ("ok", "ok")
    # the cell's explanation names the kernel's torch range: its exact pin agrees with its bytes
    assert ch["explanation"] == (
        "all checks pass; sglang-kernel 0.4.0: torch range agrees (torch==2.9.0; bytes load with torch 2.9.0)"
    )


def test_rejected_sets_carry_the_failing_checks_and_reason(inputs: Inputs) -> None:
    prefix = "torch==2.9.0 + sglang-kernel==0.4.2"
    r = next(x for x in inputs.ticket["rejected"] if x["set"].startswith(prefix))
    assert (r["status"], r["checks"]) == ("fail", ["gpu_arch"])
    assert r["explanation"].startswith("gpu_arch fail: sgl_kernel/common_ops.abi3.so: nothing runs on 12.0: ")
    assert "carries sm_100a; sglang-kernel 0.4.2: torch range agrees" in r["explanation"]


def test_probe_results_are_listed_with_their_host(inputs: Inputs) -> None:
    assert inputs.ticket["probes"] == [
        {
            "job": JOB,
            "check": "probe",
            "status": "ok",
            "explanation": "imports (driver stubbed)",
            "host": "gpu-box-7",
        }
    ]


def test_lock_file_next_to_the_matrix_is_embedded(inputs: Inputs) -> None:
    lock = (inputs.root / "m" / f"{NAME}.lock.txt").read_text()
    assert inputs.ticket["lock"] == lock
    assert [w["name"] for w in lock_wheels(lock)][-4:] == [
        "nvidia-cuda-runtime",
        "tinydep",
        "tinyextra",
        "tinyfast",
    ]


def test_restore_plan_reinstalls_the_snapshot_wheels_by_hash(inputs: Inputs, stack: SolveStack) -> None:
    # GIVEN the venv was installed from wheel files (pip recorded their file URLs)
    plan = inputs.ticket["restore_plan"]
    for name, key in (("torch", "torch_28"), ("sgl-kernel", "k030")):
        wheel = stack.wheels[key]
        sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
        assert f"{name} @ {wheel.as_uri()} --hash=sha256:{sha}\n" in plan


def test_markdown_has_every_section(inputs: Inputs) -> None:
    heads, fenced = [], False
    for line in inputs.markdown.splitlines():
        fenced = fenced != line.startswith("```")
        if not fenced and line.startswith("#"):
            heads.append(line)
    assert heads == [
        f"# Upgrade to cu13.0-sm_120-{PY_TAG}-manylinux_2_28_x86_64",
        "## What changes",
        "## Chosen set and why",
        "## Rejected sets",
        "## Probes",
        "## torch 2.8.0 → 2.9.0",
        "### Signature changed (1)",
        "### Added (1)",
        "### Known kernel wheels (4 checked)",
        "## Lock file",
        "## Restore plan",
    ]
    assert "| torch | torch | 2.8.0 | 2.9.0 | upgrade |" in inputs.markdown


def test_a_torch_upgrade_carries_the_torch_diff_and_the_kernels_it_breaks(inputs: Inputs) -> None:
    up = inputs.ticket["torch_upgrade"]
    assert (up["from"], up["to"], up["note"]) == ("2.8.0", "2.9.0", "")
    (changed,) = up["diff"]["changed"]
    assert changed["symbol"] == "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"
    assert [k["wheel"] for k in up["diff"]["kernels"]["broken"]] == ["sgl-kernel 0.3.0"]
    assert "- ❌ sgl-kernel 0.3.0 imports `c10::cuda::c10_cuda_check_implementation(int," in inputs.markdown


class _Checker(HTMLParser):
    """Collects h2 headings and checks that every opened element is closed in order."""

    VOID = frozenset({"meta", "br", "hr", "img", "input", "link"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.h2: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] == "h2":
            self.h2.append(data)


def test_html_is_well_formed_with_the_same_sections(inputs: Inputs) -> None:
    checker = _Checker()
    checker.feed(inputs.html)
    assert (checker.errors, checker.stack) == ([], [])
    assert checker.h2 == [
        "What changes",
        "Chosen set and why",
        "Rejected sets",
        "Probes",
        "torch 2.8.0 → 2.9.0",
        "Lock file",
        "Restore plan",
    ]


def test_report_refuses_a_matrix_for_a_snapshot(inputs: Inputs) -> None:
    assert main(["report", "--snapshot", str(inputs.matrix), "--matrix", str(inputs.matrix)]) == 2
