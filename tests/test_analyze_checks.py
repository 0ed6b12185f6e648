"""Set-level checks over real fixture wheels: files, filename vs METADATA, Requires-Dist, pins, companions."""

from __future__ import annotations

import sys

import pytest
from support.stacks import FixtureStacks, fixture_stacks

from abiprobe.analyze.analysis import SetAnalysis, analyze_set
from abiprobe.analyze.checks import runtime_selection
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import Verdict

BUILT_IN_STACK = default_stack()

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
T = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
P228 = builtin_profile("manylinux_2_28_x86_64")


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> FixtureStacks:
    return fixture_stacks(tmp_path_factory.mktemp("stacks"))


def _analyze(stacks: FixtureStacks, *keys: str, target: Target = T) -> SetAnalysis:
    return analyze_set(stacks.facts(*keys), target, P228, stack=BUILT_IN_STACK)


def _only(a: SetAnalysis, check: str, status: str) -> list[Verdict]:
    return [v for v in a.set_verdicts if v.check == check and v.status == status]


def test_two_distributions_installing_sgl_kernel_conflict(stacks: FixtureStacks) -> None:
    # (a warning: pip and uv install both, the later one's files replacing the earlier one's)
    a = _analyze(stacks, "torch_v1", "cuda13_runtime", "sgl_kernel_v1", "sglang_kernel_dup")
    (v,) = _only(a, "files", "warn")
    assert v.subject == "sgl_kernel"
    assert v.explanation == (
        "sgl-kernel 0.3.0 and sglang-kernel 0.4.0 both install the import package sgl_kernel/ "
        "(1 identical paths, e.g. sgl_kernel/__init__.py): both install, and the files of the one installed "
        "last replace the other's"
    )


def test_nvidia_namespace_shared_by_runtime_wheels_is_not_a_conflict(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "torch_v1", "cuda13_runtime", "sgl_kernel_v1")
    assert [v.status for v in a.set_verdicts if v.check == "files"] == ["ok"]


def test_local_label_in_filename_absent_from_metadata(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "sgl_kernel_label")
    (v,) = _only(a, "metadata", "fail")
    assert v.explanation == (
        "filename version 0.3.1+cu130 differs from METADATA Version 0.3.1: "
        "installers reject it as inconsistent"
    )


def test_requires_dist_not_met_by_the_set_blocks_it_and_false_markers_ignored(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "torch_v2", "needs_old_torch")
    (v,) = _only(a, "requires", "blocked")
    assert a.status == "blocked"
    assert (v.subject, v.explanation) == (
        "needs-old-torch 1.0.0",
        "requires torch==2.8.0 (set has torch 2.9.0)",
    )
    assert v.evidence["unmet"] == ["torch==2.8.0 (set has torch 2.9.0)"]


def test_requirement_absent_from_the_set_is_a_warning(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "torch_v1")
    (v,) = _only(a, "requires", "warn")
    assert v.explanation == "requires nvidia-cuda-runtime==13.0.96, which the set does not contain"


def test_kernel_importing_torch_symbols_without_pinning_torch_warns(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "torch_v1", "cuda13_runtime", "sgl_kernel_v1")
    (v,) = [v for v in _only(a, "requires", "warn") if v.subject == "sgl-kernel 0.3.0"]
    assert v.explanation == (
        "torch range too loose: declares no torch requirement but imports torch's C++ ABI, which only "
        "torch 2.8.0 exports (of 1 known); the torch it was built against cannot be determined, so another "
        "minor may abort it"
    )


def test_pinned_kernel_gets_no_pin_warning(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "torch_v1", "cuda13_runtime", "old_abi_kernel")
    assert [v for v in a.set_verdicts if v.subject == "old-abi-kernel 0.1.0" and v.status == "warn"] == []


def test_flashinfer_companion_with_another_version_fails(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "flashinfer_python", "flashinfer_cubin", "flashinfer_jit_cache")
    (v,) = _only(a, "metadata", "fail")
    # THEN in flashinfer's own words (flashinfer/jit/env.py raises this at import)
    assert v.explanation == (
        "flashinfer-cubin version (0.5.2) does not match flashinfer version (0.5.3). "
        "Please install the same version of both packages."
    )


def test_wheel_tag_for_a_newer_glibc_does_not_install(stacks: FixtureStacks) -> None:
    t = Target.parse(cuda="13.0", python="cp39", platform="manylinux_2_28_x86_64")
    a = _analyze(stacks, "sgl_kernel_v1", target=t)
    (v,) = _only(a, "tags", "fail")
    assert (
        v.explanation == "tags cp310-abi3-manylinux_2_28_x86_64 do not install on cp39 manylinux_2_28_x86_64"
    )


def test_sgl_kernel_picks_sm90_only_on_hopper() -> None:
    hopper = Target.parse(cuda="13.0", arch="sm90", python="cp312", platform="manylinux_2_28_x86_64")
    assert runtime_selection("sgl_kernel/sm90/common_ops.abi3.so", hopper, BUILT_IN_STACK.loading()) is True
    assert runtime_selection("sgl_kernel/sm100/common_ops.abi3.so", hopper, BUILT_IN_STACK.loading()) is False
    assert runtime_selection("sgl_kernel/sm100/common_ops.abi3.so", T, BUILT_IN_STACK.loading()) is True
    assert runtime_selection("flashinfer/x.so", T, BUILT_IN_STACK.loading()) is None
