"""A stack with no CUDA code for the asked architecture does not run there (a CPU-only ``+cpu`` torch)."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.schemas import assert_valid
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.cli import main
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

BUILT_IN_STACK = default_stack()

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TAG = f"{PY}-{PY}-manylinux_2_28_x86_64"
P228 = builtin_profile("manylinux_2_28_x86_64")


def _torch(out: Path, version: str, requires: list[str]) -> Path:
    """torch as a CPU build lays it out: torch._C over torch/lib/libtorch_cpu.so, no GPU code anywhere."""
    cpu = build_shared(
        out / version, "libtorch_cpu.so", "int cpu_f(void) { return 1; }", soname="libtorch_cpu.so"
    )
    src = (
        "extern int cpu_f(void); int c_entry(void) { return cpu_f(); }\nvoid *PyInit__C(void) { return 0; }\n"
    )
    ext = build_shared(out / version, f"_C{SUFFIX}", src, link=[cpu], runpath=["$ORIGIN/lib"])
    files: dict[str, bytes | Path] = {"torch/__init__.py": b"from . import _C\n", f"torch/_C{SUFFIX}": ext}
    files["torch/lib/libtorch_cpu.so"] = cpu
    return build_wheel(out / "w", "torch", version, files, tag=TAG, requires_dist=requires)


@pytest.fixture(scope="module")
def cpu_torch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _torch(tmp_path_factory.mktemp("cpu"), "2.9.1+cpu", [])


def _gpu_arch(wheel: Path, arch: str | None) -> list[tuple[str, str]]:
    target = Target.parse(cuda="13.0", arch=arch, python=PY, platform="manylinux_2_28_x86_64")
    a = analyze_set(
        [wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)], target, P228, stack=BUILT_IN_STACK
    )
    return [(v.status, v.explanation) for v in a.verdicts if v.check == "gpu_arch"]


def test_installed_cpu_only_torch_does_not_run_on_the_asked_gpu(
    cpu_torch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an environment with a CPU-only torch
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(cpu_torch)],
        check=True, env=env, capture_output=True,
    )  # fmt: skip
    # WHEN it is checked for an sm_120 GPU
    capsys.readouterr()
    code = main(["check", "--installed", "--python", str(python), "--arch", "sm120", "--json"])
    data = assert_valid(json.loads(capsys.readouterr().out), "check")
    # THEN it is not OK: no GPU code for the architecture (exit bit 32)
    assert (code, data["import_status"]) == (32, "fail")
    (v,) = [v for v in data["set_verdicts"] if v["check"] == "gpu_arch"]
    assert v["subject"] == "torch 2.9.1+cpu" and v["explanation"].startswith(
        "torch 2.9.1+cpu is a CPU-only build"
    )


def test_cpu_only_torch_without_an_asked_architecture_is_not_judged(cpu_torch: Path) -> None:
    assert _gpu_arch(cpu_torch, None) == []


def test_torch_requiring_cuda_wheels_is_not_called_cpu_only(tmp_path: Path) -> None:
    # GIVEN a torch whose kernels live in the CUDA wheels it requires (no GPU code in its own files)
    wheel = _torch(tmp_path, "2.9.1", ["nvidia-cuda-runtime==13.0.96"])
    assert _gpu_arch(wheel, "sm120") == []
