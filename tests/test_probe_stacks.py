"""Probe the shared torch-like fixture stacks: what static analysis predicts, a real import proves."""

from __future__ import annotations

import pytest
from support.stacks import FixtureStacks, fixture_stacks

from abiprobe.probe import ProbeOptions, ProbeResult, ProbeSet, probe_sets

SETS = {
    "sgl-on-torch28": (("torch_v1", "cuda13_runtime", "sgl_kernel_v1"), ("torch", "sgl_kernel")),
    "sgl-on-torch29": (("torch_v2", "cuda13_runtime", "sgl_kernel_v1"), ("torch", "sgl_kernel")),
    "cu12-kernel": (("torch_v1", "cuda13_runtime", "cu12_kernel"), ("torch", "cu12_kernel")),
    "driver-user": (("torch_v1", "cuda13_runtime", "driver_user"), ("torch", "driver_user")),
    "old-abi": (("torch_v1", "cuda13_runtime", "old_abi_kernel"), ("torch", "old_abi_kernel")),
    "aoti-on-torch29": (("torch_v2", "cuda13_runtime", "aoti_user"), ("torch", "aoti_user")),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProbeResult]:
    stacks: FixtureStacks = fixture_stacks(tmp_path_factory.mktemp("stacks"))
    sets = [ProbeSet(tuple(stacks.paths(*keys)), order, label) for label, (keys, order) in SETS.items()]
    return {r.label: r for r in probe_sets(sets, ProbeOptions(timeout=20, jobs=2))}


def test_kernel_loads_on_the_torch_it_was_built_for(results: dict[str, ProbeResult]) -> None:
    r = results["sgl-on-torch28"]
    assert (r.outcome, r.mode) == ("ok", "fork")
    assert ("torch", "2.8.0") in r.versions
    assert "sgl_kernel/common_ops.abi3.so" in r.loaded


def test_kernel_fails_on_the_next_torch_with_the_changed_signature(results: dict[str, ProbeResult]) -> None:
    r = results["sgl-on-torch29"]
    assert (r.outcome, r.module) == ("undefined_symbol", "sgl_kernel")
    assert r.detail["symbol"] == "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"


def test_cuda12_kernel_on_cuda13_stack_misses_libcudart_12(results: dict[str, ProbeResult]) -> None:
    r = results["cu12-kernel"]
    assert (r.outcome, r.detail["soname"]) == ("missing_soname", "libcudart.so.12")


def test_driver_api_user_imports_against_the_stub(results: dict[str, ProbeResult]) -> None:
    r = results["driver-user"]
    assert (r.outcome, r.stubbed) == ("ok", True)


def test_old_string_abi_kernel_fails_with_undefined_symbol(results: dict[str, ProbeResult]) -> None:
    r = results["old-abi"]
    assert (r.outcome, r.detail["symbol"]) == ("undefined_symbol", "_ZN5torch3jit17parseSchemaOrNameERKSsb")


def test_aoti_user_loads_on_torch_with_the_shim(results: dict[str, ProbeResult]) -> None:
    assert results["aoti-on-torch29"].outcome == "ok"
