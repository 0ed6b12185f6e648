"""flashinfer's per-architecture jit-cache providers: the solve picks the one flashinfer itself would load
for the target (exact target, then family target, then unsuffixed), judges its bytes, and says why."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.arch_wheel_stacks import arch_wheel_stack
from support.indexserver import IndexServer
from support.solve_stacks import solve_argv, solve_stack
from support.stacks import PY_TAG

from abiprobe.cli import main


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = solve_stack(tmp_path_factory.mktemp("solve-stack")).wheels
    own = arch_wheel_stack(tmp_path_factory.mktemp("provider-stack"))
    return {**{k: base[k] for k in ("torch_29", "runtime", "k040")}, **own}


def _server(wheels: dict[str, Path], *skip: str) -> IndexServer:
    srv = IndexServer()
    for key, path in sorted(wheels.items()):
        if key not in skip:
            srv.add_wheel(path)
    return srv


@pytest.fixture(scope="module")
def server(wheels: dict[str, Path]) -> Iterator[IndexServer]:
    with _server(wheels, "provider_sm121a_mislabelled") as srv:
        yield srv


def solve_for(server: IndexServer, tmp: Path, arch: str) -> dict[str, Any]:
    argv = solve_argv(server.index_url, tmp / "cache", tmp / "out")
    argv[argv.index("--arch") + 1] = arch
    main(argv)
    (path,) = (tmp / "out").glob("*.json")
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def flashinfer_group(doc: dict[str, Any]) -> dict[str, Any]:
    (group,) = [g for g in doc["groups"]["flashinfer"] if g["id"] == "flashinfer-python==0.7.0"]
    return group


@pytest.mark.parametrize(
    ("arch", "provider", "why"),
    [
        ("sm120", "flashinfer-jit-cache-sm120f", "sm120f is a family target covering sm_120"),
        ("sm121", "flashinfer-jit-cache-sm121a", "sm121a is the exact target of sm_121"),
        ("sm_90", "flashinfer-jit-cache-sm90a", "sm90a is the exact target of sm_90"),
    ],
)
def test_the_target_gets_the_provider_flashinfer_would_load(
    server: IndexServer, tmp_path: Path, arch: str, provider: str, why: str
) -> None:
    # GIVEN a shim pinning sm90a, sm120f and sm121a providers; WHEN solving for the target
    doc = solve_for(server, tmp_path, arch)
    group = flashinfer_group(doc)
    # THEN the matrix names the chosen provider and why, and the group carries exactly that provider wheel
    (choice,) = group["providers"]
    assert (choice["shim"], choice["chosen"], choice["reason"]) == ("flashinfer-jit-cache", provider, why)
    names = [w["name"] for w in group["wheels"]]
    assert names == ["flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", provider]
    assert f"**{provider}**" in next((tmp_path / "out").glob("*.md")).read_text()
    assert f"<code>{provider}</code>, {why}" in next((tmp_path / "out").glob("*.html")).read_text()


def test_the_provider_bytes_decide_the_gpu_verdict(server: IndexServer, tmp_path: Path) -> None:
    # WHEN solving for sm120: THEN the flashinfer pair's gpu_arch verdict is the sm120f module's, native
    doc = solve_for(server, tmp_path, "sm120")
    pair = doc["pairs"]["torch==2.9.0 + flashinfer-python==0.7.0"]
    (gpu,) = [v for v in pair["verdicts"] if v["check"] == "gpu_arch"]
    assert gpu["subject"] == "flashinfer_jit_cache/providers/sm120f/jit_cache/norm/norm.so"
    assert gpu["status"] == "ok"
    assert doc["chosen"]["flashinfer-jit-cache-sm120f"] == "flashinfer-jit-cache-sm120f==0.7.0+cu130"


def test_without_the_exact_target_the_family_target_is_chosen(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN no sm121a provider on the index; WHEN solving for sm121
    with _server(wheels, "provider_sm121a", "provider_sm121a_mislabelled") as srv:
        doc = solve_for(srv, tmp_path, "sm121")
    (choice,) = flashinfer_group(doc)["providers"]
    # THEN sm120f (its SASS runs within the 12.x family) is chosen, saying the exact one was not found
    assert choice["chosen"] == "flashinfer-jit-cache-sm120f"
    assert choice["reason"] == ("sm120f is a family target covering sm_121 (no sm121a 0.7.0+cu130 found)")


def test_a_provider_whose_bytes_lack_the_target_fails_gpu_arch(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN an sm121a provider that carries only sm_90a code; WHEN solving for sm121
    with _server(wheels, "provider_sm121a") as srv:
        doc = solve_for(srv, tmp_path, "sm121")
    # THEN it is the one flashinfer would load, and its bytes fail: no set with it passes
    (choice,) = flashinfer_group(doc)["providers"]
    assert choice["chosen"] == "flashinfer-jit-cache-sm121a"
    pair = doc["pairs"]["torch==2.9.0 + flashinfer-python==0.7.0"]
    (gpu,) = [v for v in pair["verdicts"] if v["check"] == "gpu_arch"]
    assert (gpu["status"], gpu["evidence"]["carries"]) == ("fail", ["sm_90a"])
    assert doc["chosen"] is None or "flashinfer-jit-cache-sm121a" not in doc["chosen"]


def test_a_target_with_no_provider_says_so(server: IndexServer, tmp_path: Path) -> None:
    # WHEN solving for sm_100, which none of sm90a / sm120f / sm121a runs on
    doc = solve_for(server, tmp_path, "sm100")
    (choice,) = flashinfer_group(doc)["providers"]
    # THEN no provider is chosen, and the pair warns that flashinfer will JIT-compile instead
    assert choice["chosen"] is None
    assert choice["reason"].startswith("no flashinfer-jit-cache provider targets sm_100")
    pair = doc["pairs"]["torch==2.9.0 + flashinfer-python==0.7.0"]
    warned = [v for v in pair["verdicts"] if v["check"] == "gpu_arch" and v["status"] == "warn"]
    assert [v["explanation"] for v in warned] == [choice["reason"]]


def test_a_provider_of_another_version_fails_in_flashinfers_words(
    wheels: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN flashinfer 0.7.0 and its shim with the 0.7.1 sm120f provider; WHEN checking the set
    paths = [wheels[k] for k in ("torch_29", "runtime", "fi", "cubin", "shim", "provider_sm120f_071")]
    argv = ["check", *map(str, paths), "--cuda", "13.0", "--arch", "sm120", "--python", PY_TAG, "--json"]
    rc = main([*argv, "--platform", "manylinux_2_28_x86_64"])
    doc = json.loads(capsys.readouterr().out)
    # THEN it fails with flashinfer's own error, and with the shim's exact pin
    assert rc != 0
    texts = {
        v["explanation"] for v in doc["set_verdicts"] if v["check"] == "metadata" and v["status"] == "fail"
    }
    assert texts == {
        "flashinfer-jit-cache-sm120f version (0.7.1+cu130) does not match flashinfer version (0.7.0). "
        "Please install the same version of both packages.",
        "flashinfer-jit-cache-sm120f version (0.7.1+cu130) does not match flashinfer-jit-cache version "
        "(0.7.0+cu130), which pins it",
    }


def _check(wheels: dict[str, Path], arch: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    keys = ("torch_29", "runtime", "fi", "cubin", "shim", "provider_sm90a", "provider_sm120f")
    argv = ["check", *(str(wheels[k]) for k in keys), "--cuda", "13.0", "--arch", arch, "--python", PY_TAG]
    main([*argv, "--platform", "manylinux_2_28_x86_64", "--json"])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_check_judges_the_gpu_code_of_the_provider_the_target_loads(
    wheels: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a set with the sm90a and sm120f providers; WHEN checking it for sm120
    doc = _check(wheels, "sm120", capsys)
    gpu = [(v["subject"], v["status"]) for v in doc["set_verdicts"] if v["check"] == "gpu_arch"]
    # THEN only sm120f's module is judged (flashinfer never loads the sm90a one there), and it runs
    assert gpu == [("flashinfer_jit_cache/providers/sm120f/jit_cache/norm/norm.so", "ok")]


def test_check_warns_when_no_provider_of_the_set_serves_the_gpu(
    wheels: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _check(wheels, "sm100", capsys)
    gpu = [(v["status"], v["explanation"]) for v in doc["set_verdicts"] if v["check"] == "gpu_arch"]
    assert gpu == [
        (
            "warn",
            "none of flashinfer-jit-cache-sm120f, flashinfer-jit-cache-sm90a targets sm_100: "
            "flashinfer compiles its kernels at run time (JIT) instead",
        )
    ]
