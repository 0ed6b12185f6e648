"""The GitHub workflows: valid against the published workflow schema, and their scripts run here for real
(the nightly refresh over two fixture-index days; the probe job emission)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from support.indexserver import IndexServer
from support.solve_stacks import SolveStack, _kernel, serve, solve_stack
from support.stacks import PY_TAG
from support.tools import venv_path_env

REPO = Path(__file__).parent.parent
WORKFLOWS = REPO / ".github" / "workflows"
SCHEMA = json.loads((Path(__file__).parent / "data" / "github-workflow.schema.json").read_text())
PLATFORM = "manylinux_2_28_x86_64"  # named, as the workflows name it: the default target is the host
NAME = f"cu130-sm120-{PY_TAG}-{PLATFORM}"


def workflow(name: str) -> dict[str, Any]:
    """Parse a workflow; YAML 1.1 reads the bare key ``on`` as True, GitHub reads it as "on"."""
    data: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    if True in data:
        data["on"] = data.pop(True)
    return data


def step(wf: dict[str, Any], job: str, ident: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in wf["jobs"][job]["steps"] if s.get("id") == ident)
    return found


@dataclass(frozen=True)
class Run:
    rc: int
    summary: str
    outputs: dict[str, str]
    stderr: str


def run_step(script: str, cwd: Path, env: dict[str, str]) -> Run:
    """Run a workflow step's script with bash as the runner would, GitHub's files pointed at temp files."""
    summary, output = cwd / ".summary.md", cwd / ".output"
    summary.write_text("")
    output.write_text("")
    full = {
        **os.environ,
        **env,
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "PATH": venv_path_env()["PATH"],
        "PYTHONPATH": str(REPO),
    }
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=full, capture_output=True, text=True)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return Run(proc.returncode, summary.read_text(), outputs, proc.stderr)


@pytest.mark.parametrize("name", ["nightly.yml", "probe-gpu.yml"])
def test_workflow_validates_against_the_github_workflow_schema(name: str) -> None:
    jsonschema.validate(workflow(name), SCHEMA)


def test_the_schema_rejects_a_broken_workflow() -> None:
    broken = copy.deepcopy(workflow("nightly.yml"))
    broken["schedule"] = broken["on"].pop("schedule")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)


def test_nightly_runs_on_a_schedule_and_commits_matrices_and_the_cache() -> None:
    wf = workflow("nightly.yml")
    assert wf["on"]["schedule"] == [{"cron": "17 3 * * *"}]
    steps = wf["jobs"]["commit"]["steps"]
    commit = next(s for s in steps if s.get("name") == "Commit matrices and the wheel cache")
    assert "git add matrices wheel_index_cache" in commit["run"]


def _uses(wf: dict[str, Any], job: str) -> list[str]:
    return [s["uses"] for s in wf["jobs"][job]["steps"] if "uses" in s]


@pytest.mark.parametrize("name", ["nightly.yml", "probe-gpu.yml"])
def test_only_the_commit_job_may_write_and_it_runs_no_third_party_code(name: str) -> None:
    wf = workflow(name)
    assert wf["permissions"] == {"contents": "read"}
    for job, spec in wf["jobs"].items():
        runs = " ".join(s.get("run", "") for s in spec["steps"])
        if job == "commit":
            assert spec["permissions"] == {"contents": "write"}
            assert "pip install" not in runs and "abiprobe" not in runs
        elif job == "pages":  # deploys the published tree: the Pages token alone, and no script at all
            assert spec["permissions"] == {"pages": "write", "id-token": "write"}
            assert runs == "" and [s["uses"].split("@")[0] for s in spec["steps"]] == ["actions/deploy-pages"]
        else:
            assert spec.get("permissions", wf["permissions"]) == {"contents": "read"}
            checkout = next(s for s in spec["steps"] if s.get("uses", "").startswith("actions/checkout@"))
            assert checkout["with"]["persist-credentials"] is False


@pytest.mark.parametrize("name", ["nightly.yml", "probe-gpu.yml"])
def test_every_action_is_pinned_by_commit_sha(name: str) -> None:
    text = (WORKFLOWS / name).read_text()
    uses = re.findall(r"uses: (\S+)", text)
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses


def test_nightly_uploads_matrices_logs_and_cache_and_keeps_facts_between_nights() -> None:
    wf = workflow("nightly.yml")
    refresh = wf["jobs"]["refresh"]["steps"]
    upload = next(s for s in refresh if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"
    assert set(upload["with"]["path"].split()) == {"matrices/", "wheel_index_cache/", ".nightly/"}
    kept = next(s for s in refresh if s.get("uses", "").startswith("actions/cache@"))
    assert "wheel_index_cache/facts" in kept["with"]["path"].split()
    assert kept["with"]["restore-keys"] == "abiprobe-nightly-"


def test_nightly_uploads_the_published_tree_for_pages() -> None:
    wf = workflow("nightly.yml")
    refresh = wf["jobs"]["refresh"]["steps"]
    upload = next(s for s in refresh if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == ".published/"
    assert "cache publish .published" in step(wf, "refresh", "publish")["run"]
    assert wf["jobs"]["pages"]["needs"] == "refresh"


def test_probe_workflow_fans_out_over_the_emitted_matrix() -> None:
    probe = workflow("probe-gpu.yml")["jobs"]["probe"]
    assert probe["strategy"]["matrix"] == "${{ fromJSON(needs.emit.outputs.matrix) }}"
    assert probe["runs-on"] == "${{ matrix.runs_on }}"
    assert "abiprobe probe --job probe-jobs.json --job-id" in probe["steps"][4]["run"]


@dataclass(frozen=True)
class Nights:
    repo: Path
    first: Run
    second: Run
    third: Run  # the second night's indexes asked again (--refresh): nothing changed
    rewritten: list[str]  # cache files the third night changed


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> SolveStack:
    return solve_stack(tmp_path_factory.mktemp("solve-stack"))


@pytest.fixture(scope="module")
def nights(stack: SolveStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nights]:
    # GIVEN the nightly refresh script, a checkout with no matrices yet, and two nights of one index:
    # the second night has a new kernel release and sglang-kernel 0.4.0 re-uploaded without sm_120 code
    repo = tmp_path_factory.mktemp("checkout")
    script = step(workflow("nightly.yml"), "refresh", "refresh")["run"]
    c10 = stack.root / "t29" / "torch-2.9.0" / "libc10.so"
    cudart = stack.root / "runtime" / "libcudart.so.13"
    rebuilt = _kernel(
        repo.parent / "rebuilt-wheels",
        repo.parent / "rebuilt",
        "sglang-kernel",
        "0.4.0",
        c10,
        cudart,
        unsigned=True,
        requires=["torch==2.9.0"],
        gencode="arch=compute_100a,code=sm_100a",
    )
    env = {"NIGHTLY_TARGETS": "# cuda arch\n13.0 sm120\n"}
    with IndexServer() as night1:
        for key, path in sorted(stack.wheels.items()):
            if key != "k042_sm100a":
                night1.add_wheel(path, **({"yanked": "x"} if key in stack.yanked else {}))
        args = f"--python {PY_TAG} --platform {PLATFORM} --index {night1.index_url}"
        first = run_step(script, repo, {**env, "SOLVE_ARGS": args})
    with IndexServer() as night2:
        for key, path in sorted(stack.wheels.items()):
            options = {"yanked": "x"} if key in stack.yanked else {}
            night2.add_wheel(rebuilt if key == "k040" else path, **options)
        args = f"--python {PY_TAG} --platform {PLATFORM} --index {night2.index_url}"
        second = run_step(script, repo, {**env, "SOLVE_ARGS": args})
        before = {p: p.read_bytes() for p in (repo / "wheel_index_cache").rglob("*") if p.is_file()}
        third = run_step(script, repo, {**env, "SOLVE_ARGS": f"{args} --refresh"})
        after = {p: p.read_bytes() for p in (repo / "wheel_index_cache").rglob("*") if p.is_file()}
    rewritten = sorted(
        str(p.relative_to(repo)) for p in set(before) | set(after) if before.get(p) != after.get(p)
    )
    yield Nights(repo, first, second, third, rewritten)


def test_first_night_writes_a_new_matrix(nights: Nights) -> None:
    assert (nights.first.rc, nights.first.outputs) == (0, {"regressions": "false", "broken": "false"})
    assert f"### New matrix: {NAME}" in nights.first.summary
    names = sorted(p.name for p in (nights.repo / "matrices").iterdir())
    assert names == [f"{NAME}.html", f"{NAME}.json", f"{NAME}.lock.txt", f"{NAME}.md", f"pylock.{NAME}.toml"]


def test_the_wheel_cache_is_kept_in_the_checkout(nights: Nights) -> None:
    assert any((nights.repo / "wheel_index_cache" / "facts").rglob("*"))


def test_second_night_publishes_the_diff_and_flags_the_regression(nights: Nights) -> None:
    assert (nights.second.rc, nights.second.outputs) == (0, {"regressions": "true", "broken": "false"})
    assert "**1 regression(s)** (ok → fail)" in nights.second.summary
    assert "| torch==2.9.0 + sglang-kernel==0.4.0 | ok | fail | gpu_arch ok→fail |" in nights.second.summary


def test_a_night_when_nothing_changed_rewrites_no_cache_file(nights: Nights) -> None:
    # the third night asked every index again (--refresh) and got the same pages: nothing to commit
    assert nights.third.rc == 0
    assert nights.rewritten == []


def test_the_publish_step_writes_a_tree_of_the_nights_checked_facts(nights: Nights) -> None:
    # GIVEN the checkout after the nights; WHEN the publish step runs THEN the tree's manifest lists the
    # facts of every wheel the nights read (each checked against its sha256: --verify-wheels), each file
    # matching its digest, and the step summary says what was published
    run = run_step(step(workflow("nightly.yml"), "refresh", "publish")["run"], nights.repo, {})
    assert run.rc == 0, run.stderr
    tree = nights.repo / ".published"
    manifest = json.loads((tree / "manifest.json").read_text())
    stored = {
        p.name.removesuffix(".facts.gz")
        for p in (nights.repo / "wheel_index_cache" / "facts").rglob("*.facts.gz")
    }
    assert set(manifest["facts"]) == stored
    for sha, spec in manifest["facts"].items():
        data = (tree / "facts" / sha[:2] / f"{sha}.facts.gz").read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (spec["size"], spec["sha256"])
    assert manifest["analyses"]
    assert "left out 0 facts read by range" in run.summary


def test_second_night_updates_the_committed_matrix(nights: Nights) -> None:
    doc = json.loads((nights.repo / "matrices" / f"{NAME}.json").read_text())
    assert "sglang-kernel==0.4.2" in [g["id"] for g in doc["groups"]["kernel"]]


def test_probe_emit_step_outputs_a_github_matrix(stack: SolveStack, tmp_path: Path) -> None:
    script = step(workflow("probe-gpu.yml"), "emit", "emit")["run"]
    with IndexServer() as server:
        serve(server, stack)
        run = run_step(
            script,
            tmp_path,
            {
                "CUDA": "13.0",
                "ARCH": "sm120",
                "PROBE_ARCHS": "sm120 sm90",
                "CELLS": "chosen",
                "SOLVE_ARGS": f"--python {PY_TAG} --platform {PLATFORM} --index {server.index_url}",
            },
        )
    assert run.rc == 0, run.stderr
    members = "torch-2.9.0-sglang-kernel-0.4.0-flashinfer-python-0.5.3"
    assert json.loads(run.outputs["matrix"]) == {
        "include": [
            {"id": f"sm120-{members}", "runs_on": ["self-hosted", "linux", "gpu", "sm120"]},
            {"id": f"sm90-{members}", "runs_on": ["self-hosted", "linux", "gpu", "sm90"]},
        ]
    }
    assert run.outputs["count"] == "2"
