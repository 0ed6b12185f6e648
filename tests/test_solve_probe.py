"""`solve --probe`: the chosen set is imported for real and the outcome lands in the matrix."""

from __future__ import annotations

import json

import pytest
from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_stack
from support.stacks import PY_TAG

from abiprobe.cli import main

PLATFORM = "manylinux_2_28_x86_64"
NAME = f"cu130-sm120-{PY_TAG}-{PLATFORM}"
CELL = ("torch==2.9.0", "sglang-kernel==0.4.0")


def test_solve_with_probe_records_the_real_import_in_the_chosen_cell(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # GIVEN the fixture stack on the local index (its newest passing set is torch 2.9.0 + sglang-kernel 0.4.0)
    root = tmp_path_factory.mktemp("solve-probe")
    stack = solve_stack(root / "stack")
    with IndexServer() as server:
        serve(server, stack)
        # WHEN solve runs with --probe
        rc = main(["solve", "--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG,
                   "--platform", PLATFORM,
                   "--index", server.index_url, "--cache-dir", str(root / "cache"),
                   "--out-dir", str(root / "m"), "--json", "--probe",
                   "--wheels-dir", str(root / "wheels")])  # fmt: skip
    # THEN the set was found, and the chosen cell carries a passing probe verdict from a real import
    assert rc == 0
    doc = json.loads((root / "m" / f"{NAME}.json").read_text())
    cell = next(c for c in doc["cells"] if (c["row"], c["col"]) == CELL)
    probes = [v for v in cell["set_verdicts"] if v["check"] == "probe"]
    assert [v["status"] for v in probes] == ["ok"], probes
    assert cell["checks"]["probe"] == "ok"
    fetched = {p.name.split("-")[0] for p in (root / "wheels").iterdir()}
    assert {"torch", "sglang_kernel", "flashinfer_python", "nvidia_cuda_runtime"} <= fetched
