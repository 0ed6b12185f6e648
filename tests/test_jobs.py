"""Probe jobs end to end: ``solve --emit-probe-jobs``, ``probe --job`` run here, ``matrix merge`` back."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.indexserver import IndexServer
from support.schemas import assert_valid
from support.solve_stacks import serve, solve_argv, solve_stack
from support.stacks import PY_TAG

from abiprobe.cli import main
from abiprobe.errors import HashMismatchError, UsageError
from abiprobe.net.http import Http
from abiprobe.probe.job_runner import fetch_wheel
from abiprobe.probe.jobs import merge_results, select_job
from abiprobe.report.matrix_json import matrix_schema

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
SCHEMA = Path(__file__).parent.parent / "abiprobe" / "schemas" / "probe-jobs.schema.json"
MEMBERS = "torch-2.9.0-sglang-kernel-0.4.0-flashinfer-python-0.5.3"
CELL = ("torch==2.9.0", "sglang-kernel==0.4.0")


@dataclass(frozen=True)
class Ran:
    root: Path
    matrix: Path
    jobs: dict[str, Any]
    probe_rc: int
    result_file: Path
    merge_rc: int
    merged: dict[str, Any]
    server_url: str


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    stack = solve_stack(tmp_path_factory.mktemp("solve-stack"))
    with IndexServer() as srv:
        serve(srv, stack)
        yield srv


@pytest.fixture(scope="module")
def ran(server: IndexServer, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    root = tmp_path_factory.mktemp("jobs")
    jobs_file = root / "probe-jobs.json"
    rc = main(
        [
            *solve_argv(server.index_url, root / "cache", root / "matrices", "--json"),
            "--emit-probe-jobs",
            str(jobs_file),
            "--probe-arch",
            "sm120",
            "--probe-arch",
            "sm90",
        ]
    )
    assert rc == 0
    result = root / "results" / f"sm120-{MEMBERS}.json"
    probe_rc = main(
        [
            "probe",
            "--job",
            str(jobs_file),
            "--job-id",
            f"sm120-{MEMBERS}",
            "--result",
            str(result),
            "--wheels-dir",
            str(root / "wheels"),
            "--timeout",
            "60",
        ]
    )
    matrix = root / "matrices" / f"{NAME}.json"
    merge_rc = main(["matrix", "merge", str(matrix), str(result), "--out-dir", str(root / "merged")])
    merged = load(root / "merged" / f"{NAME}.json")
    return Ran(root, matrix, load(jobs_file), probe_rc, result, merge_rc, merged, server.index_url)


def cell_of(doc: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in doc["cells"] if (c["row"], c["col"]) == CELL)


def test_job_file_validates_against_its_schema(ran: Ran) -> None:
    jsonschema.validate(ran.jobs, json.loads(SCHEMA.read_text()))


def test_one_job_per_gpu_arch_for_the_chosen_set(ran: Ran) -> None:
    jobs = ran.jobs["include"]
    assert [(j["id"], j["target"]["arch"], j["runs_on"]) for j in jobs] == [
        (f"sm120-{MEMBERS}", "12.0", ["self-hosted", "linux", "gpu", "sm120"]),
        (f"sm90-{MEMBERS}", "9.0", ["self-hosted", "linux", "gpu", "sm90"]),
    ]


def test_job_carries_the_set_the_runtime_wheels_and_the_import_order(ran: Ran) -> None:
    job = ran.jobs["include"][0]
    assert [w["name"] for w in job["wheels"]] == [
        "torch",
        "sglang-kernel",
        "flashinfer-python",
        "flashinfer-cubin",
        "flashinfer-jit-cache",
        "nvidia-cuda-runtime",
        "tinydep",  # the rest of the install: an install with dependencies would add these
        "tinyextra",
        "tinyfast",
    ]
    assert all(len(w["sha256"]) == 64 for w in job["wheels"])
    assert job["import_order"] == [
        "torch",
        "sgl_kernel",
        "flashinfer",
        "flashinfer_cubin",
        "flashinfer_jit_cache",
    ]
    assert (job["expected"], job["expected_gpu"], job["python"]) == ("ok", "ok", f"{PY_TAG[2]}.{PY_TAG[3:]}")
    assert job["expected_message"] is None  # a set that loads predicts no loader error


def test_a_job_for_another_arch_has_no_static_gpu_verdict(ran: Ran) -> None:
    assert ran.jobs["include"][1]["expected_gpu"] is None


def test_probe_job_runs_here_and_writes_a_result(ran: Ran) -> None:
    doc = load(ran.result_file)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    assert ran.probe_rc == 0
    assert (doc["result"]["outcome"], doc["job"]["cell"]) == ("ok", {"row": CELL[0], "col": CELL[1]})
    assert [v["check"] for v in doc["verdicts"]] == ["probe"]


def test_merge_folds_the_probe_verdict_into_its_cell(ran: Ran) -> None:
    assert ran.merge_rc == 0
    cell = cell_of(ran.merged)
    probe = [v for v in cell["set_verdicts"] if v["check"] == "probe"]
    assert [(v["status"], v["subject"]) for v in probe] == [("ok", f"sm120-{MEMBERS}")]
    assert (cell["status"], cell["checks"]["probe"]) == ("ok", "ok")


def test_merged_matrix_still_validates(ran: Ran) -> None:
    jsonschema.validate(ran.merged, matrix_schema())


def test_a_failed_probe_fails_the_cell_and_explains_why(ran: Ran) -> None:
    res = load(ran.result_file)
    res["verdicts"][0].update(status="fail", explanation="undefined_symbol: _Z3foov")
    merged, report = merge_results(load(ran.matrix), [res])
    cell = cell_of(merged)
    assert report.merged == (f"sm120-{MEMBERS}",)
    assert (cell["status"], cell["checks"]["probe"]) == ("fail", "fail")
    assert cell["explanation"] == f"probe fail: sm120-{MEMBERS}: undefined_symbol: _Z3foov"


def test_a_rerun_replaces_the_earlier_result(ran: Ran) -> None:
    res = load(ran.result_file)
    once, _ = merge_results(load(ran.matrix), [res])
    twice, _ = merge_results(once, [res])
    assert cell_of(twice)["set_verdicts"] == cell_of(once)["set_verdicts"]


def test_result_for_another_arch_finds_no_matrix(ran: Ran, capsys: pytest.CaptureFixture[str]) -> None:
    res = load(ran.result_file)
    other = copy.deepcopy(res)
    other["job"]["target"]["arch"], other["job"]["id"] = "9.0", f"sm90-{MEMBERS}"
    path = ran.root / "sm90-result.json"
    path.write_text(json.dumps(other))
    rc = main(["matrix", "merge", str(ran.matrix), str(path), "--out-dir", str(ran.root / "m2")])
    assert rc == 1
    assert f"no matrix or cell for sm90-{MEMBERS}" in capsys.readouterr().out
    # AND as JSON, the unmatched result is named
    rc = main(["matrix", "merge", str(ran.matrix), str(path), "--out-dir", str(ran.root / "m3"), "--json"])
    doc = assert_valid(json.loads(capsys.readouterr().out), "matrix-merge")
    assert rc == 1 and doc["unmatched"] == [f"sm90-{MEMBERS}"]


def test_several_jobs_need_a_job_id(ran: Ran) -> None:
    with pytest.raises(UsageError, match="holds 2 jobs: pass --job-id"):
        select_job(ran.jobs, None)


def test_a_wheel_whose_sha256_differs_from_the_job_is_refused(ran: Ran, tmp_path: Path) -> None:
    wheel = dict(ran.jobs["include"][0]["wheels"][1], sha256="0" * 64)
    with Http() as http, pytest.raises(HashMismatchError, match="the job says 0000"):
        fetch_wheel(wheel, tmp_path, http)
    assert list(tmp_path.iterdir()) == []
