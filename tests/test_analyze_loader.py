"""Loader simulation over real fixture wheels: each real-world failure class, its verdict and explanation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.stacks import FixtureStacks, fixture_stacks

from abiprobe.analyze.analysis import SetAnalysis, analyze_extension, analyze_set
from abiprobe.analyze.loader import LoaderSimulation, provider_name
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.model.facts import SymbolImport
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import Verdict

BUILT_IN_STACK = default_stack()

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
P228 = builtin_profile("manylinux_2_28_x86_64")
P234 = builtin_profile("manylinux_2_34_x86_64")
T = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
CORE = ("torch_v1", "cuda13_runtime")


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> FixtureStacks:
    return fixture_stacks(tmp_path_factory.mktemp("stacks"))


def _analyze(stacks: FixtureStacks, *keys: str, target: Target = T, profile=P228) -> SetAnalysis:  # type: ignore[no-untyped-def]
    return analyze_set(stacks.facts(*keys), target, profile, stack=BUILT_IN_STACK)


def _verdict(a: SetAnalysis, check: str, subject: str) -> Verdict:
    found = [v for v in a.verdicts if v.check == check and v.subject == subject]
    assert len(found) == 1, [v.to_json() for v in a.verdicts if v.check == check]
    return found[0]


def test_kernel_built_against_its_torch_passes_every_check(stacks: FixtureStacks) -> None:
    # GIVEN torch 2.8.0, the CUDA 13 runtime and sgl-kernel built against torch 2.8.0
    a = _analyze(stacks, *CORE, "sgl_kernel_v1")
    # THEN the set loads: no check fails
    assert a.ok
    assert {v.status for v in a.verdicts if v.subject == "sgl_kernel/common_ops.abi3.so"} == {"ok"}


def test_torch_upgrade_that_changed_a_parameter_is_a_signature_change(stacks: FixtureStacks) -> None:
    # GIVEN the same kernel with torch 2.9.0, whose c10 function takes unsigned int
    a = _analyze(stacks, "torch_v2", "cuda13_runtime", "sgl_kernel_v1")
    v = _verdict(a, "symbols", "sgl_kernel/common_ops.abi3.so")
    # THEN symbols fail and both signatures and the exporting wheel are named (demangled when shown)
    assert (v.status, a.ok) == ("fail", False)
    assert v.text == (
        "signature changed: wants c10::cuda::c10_cuda_check_implementation(int, char const*, "
        "char const*, int, "
        "bool); libc10.so (torch 2.9.0) exports c10::cuda::c10_cuda_check_implementation(unsigned int, char "
        "const*, char const*, int, bool)"
    )
    assert v.evidence["missing"][0]["exported"] == "_ZN3c104cuda29c10_cuda_check_implementationEjPKcS2_ib"
    # AND what is kept (and stored) holds the mangled names, the same on every host
    assert v.explanation == (
        "signature changed: wants {demangle:_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib}; "
        "libc10.so (torch 2.9.0) exports {demangle:_ZN3c104cuda29c10_cuda_check_implementationEjPKcS2_ib}"
    )
    assert v.to_json()["explanation"] == v.text
    assert v.to_json(rendered=False)["explanation"] == v.explanation


def test_old_string_abi_import_against_cxx11_torch_is_a_string_abi_mismatch(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, *CORE, "old_abi_kernel")
    v = _verdict(a, "symbols", "old_abi_kernel/_ext.abi3.so")
    assert v.status == "fail"
    assert v.text.startswith(
        "C++ std::string ABI mismatch: wants torch::jit::parseSchemaOrName(std::string const&, bool) "
        "(old ABI); libtorch_cpu.so (torch 2.8.0) exports only the cxx11 form "
        "torch::jit::parseSchemaOrName(std::__cxx11::"
    )
    assert v.evidence["missing"][0]["kind"] == "string_abi"


def test_cuda12_soname_on_a_cuda13_set_names_both_runtimes(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, *CORE, "cu12_kernel")
    v = _verdict(a, "sonames", "cu12_kernel/_ext.abi3.so")
    assert v.status == "fail"
    assert v.explanation == (
        "libcudart.so.12 not found: built for CUDA 12; this set provides libcudart.so.13 from "
        "nvidia-cuda-runtime 13.0.96; nvidia-cuda-runtime-cu12 would provide it"
    )


def test_cuda_runtime_missing_from_the_set_names_the_wheel_to_add(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "torch_v1", "sgl_kernel_v1")
    v = _verdict(a, "sonames", "sgl_kernel/common_ops.abi3.so")
    assert (
        v.explanation == "libcudart.so.13 not found: built for CUDA 13; nvidia-cuda-runtime would provide it"
    )


def test_runtime_library_resolves_through_torchs_global_preload(stacks: FixtureStacks) -> None:
    # GIVEN the kernel has no RPATH WHEN loaded after torch THEN libcudart.so.13 comes from the preloaded set
    sim = LoaderSimulation(stacks.facts(*CORE, "sgl_kernel_v1"), T, P228, BUILT_IN_STACK.loading())
    result = sim.load_extension("sgl_kernel/common_ops.abi3.so")
    how = {n.soname: (n.provider, n.how) for n in result.needed}
    assert how["libcudart.so.13"] == ("nvidia/cu13/lib/libcudart.so.13", "loaded")
    assert how["libc10.so"] == ("torch/lib/libc10.so", "loaded")


def test_torch_extension_finds_its_libs_through_runpath_origin(stacks: FixtureStacks) -> None:
    # GIVEN torch alone (its libs are preloaded globally) WHEN _C loads THEN every soname is found
    sim = LoaderSimulation(stacks.facts("torch_v1"), T, P228, BUILT_IN_STACK.loading())
    ext = next(o.path for o in sim.layout.extensions())
    assert ext.startswith("torch/_C.")
    assert sim.load_extension(ext).missing_sonames == ()


def test_runpath_origin_is_resolved_in_the_layout_without_a_preload(stacks: FixtureStacks) -> None:
    # GIVEN libtorch_cpu.so WHEN its RUNPATH $ORIGIN is resolved THEN it names torch/lib
    sim = LoaderSimulation(stacks.facts("torch_v1"), T, P228, BUILT_IN_STACK.loading())
    cpu = sim.layout.objects["torch/lib/libtorch_cpu.so"]
    assert sim.layout.search_dirs(cpu, cpu.facts.runpath) == ["torch/lib"]


def test_system_library_absent_from_the_profile(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, *CORE, "numa_user")
    v = _verdict(a, "sonames", "numa_user/_ext.abi3.so")
    assert (v.status, v.explanation) == (
        "system",
        "libnuma.so.1 is not a system library of manylinux_2_28_x86_64: loads where the system has it "
        "(Debian/Ubuntu: libnuma1; RHEL family: numactl-libs)",
    )


def test_glibc_symbol_version_newer_than_the_target(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, *CORE, "new_glibc")
    v = _verdict(a, "symbol_versions", "new_glibc/_ext.abi3.so")
    assert v.status == "fail"
    assert v.explanation == (
        "needs GLIBC_2.34 from libc.so.6 (for pthread_create); "
        "manylinux_2_28_x86_64 provides up to GLIBC_2.28"
    )


def test_same_glibc_symbol_version_passes_on_manylinux_2_34(stacks: FixtureStacks) -> None:
    t = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_34_x86_64")
    a = _analyze(stacks, *CORE, "new_glibc", target=t, profile=P234)
    assert _verdict(a, "symbol_versions", "new_glibc/_ext.abi3.so").status == "ok"


def test_driver_api_symbol_newer_than_the_target_driver(stacks: FixtureStacks) -> None:
    t = Target.parse(
        cuda="12.2", arch="sm90", python=PY, platform="manylinux_2_28_x86_64", driver="535.54.03"
    )
    a = _analyze(stacks, "driver_user", target=t)
    v = _verdict(a, "driver", "driver_user/_ext.abi3.so")
    assert v.explanation == (
        "cuGreenCtxCreate needs a CUDA 12.4 driver (driver >= 550.54.14); driver 535.54.3 supports CUDA 12.2"
    )


def test_driver_api_symbol_passes_with_a_new_enough_driver(stacks: FixtureStacks) -> None:
    t = Target.parse(
        cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64", driver="580.95.05"
    )
    a = _analyze(stacks, "driver_user", target=t)
    assert _verdict(a, "driver", "driver_user/_ext.abi3.so").status == "ok"


def test_libcuda_loaded_by_an_earlier_unit_is_still_the_drivers(stacks: FixtureStacks) -> None:
    # GIVEN an extension that needs libcuda.so.1, loaded once (the driver's library stays in the process)
    sim = LoaderSimulation(stacks.facts("driver_user"), T, P228, BUILT_IN_STACK.loading())
    sim.load_extension("driver_user/_ext.abi3.so")
    # WHEN a later unit needs libcuda.so.1 again
    again = sim.load_extension("driver_user/_ext.abi3.so")
    # THEN it is met by the loaded copy, and the driver would have provided it anyway (whatever loads first)
    cuda = next(n for n in again.needed if n.soname == "libcuda.so.1")
    assert (cuda.how, cuda.found_otherwise) == ("loaded", True)


def test_gpu_less_profile_has_no_libcuda(stacks: FixtureStacks) -> None:
    from dataclasses import replace

    a = _analyze(stacks, "driver_user", profile=replace(P228, driver=False))
    v = _verdict(a, "sonames", "driver_user/_ext.abi3.so")
    assert v.explanation.startswith("libcuda.so.1 not found")


def test_stable_abi_shim_missing_in_an_older_torch(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, *CORE, "aoti_user")
    v = _verdict(a, "symbols", "aoti_user/_ext.abi3.so")
    assert v.explanation == (
        "stable-ABI shim missing: aoti_torch_abi_version is not exported (torch 2.8.0); "
        "built for a newer torch's C shim"
    )


def test_stable_abi_shim_present_in_the_newer_torch(stacks: FixtureStacks) -> None:
    a = _analyze(stacks, "torch_v2", "cuda13_runtime", "aoti_user")
    assert _verdict(a, "symbols", "aoti_user/_ext.abi3.so").status == "ok"


def test_arch_specific_sass_runs_natively_on_its_exact_capability(stacks: FixtureStacks) -> None:
    v = _verdict(_analyze(stacks, "gpu_kernel"), "gpu_arch", "gpu_kernel/sm120a_ops.abi3.so")
    assert (v.status, v.evidence["carries"]) == ("ok", ["sm_120a"])


def test_arch_specific_sass_has_no_kernel_for_a_sibling_capability(stacks: FixtureStacks) -> None:
    t = Target.parse(cuda="13.0", arch="sm121", python=PY, platform="manylinux_2_28_x86_64")
    v = _verdict(_analyze(stacks, "gpu_kernel", target=t), "gpu_arch", "gpu_kernel/sm120a_ops.abi3.so")
    assert (v.status, v.explanation) == ("fail", "nothing runs on 12.1: carries sm_120a")


def test_ptx_only_extension_runs_through_jit_with_a_warning(stacks: FixtureStacks) -> None:
    v = _verdict(_analyze(stacks, "gpu_kernel"), "gpu_arch", "gpu_kernel/ptx_ops.abi3.so")
    assert v.status == "warn"
    assert v.explanation == "no SASS for 12.0 (carries compute_90); the driver JIT-compiles PTX compute_90"


def test_cpython_extension_for_another_python_fails_the_tags_check(stacks: FixtureStacks) -> None:
    other = (3, 12) if sys.version_info[:2] != (3, 12) else (3, 13)
    t = Target(cuda=(13, 0), python=other, platform="manylinux_2_28_x86_64")
    a = _analyze(stacks, *CORE, target=t)
    ext = next(u for u in a.units if u.path.startswith("torch/_C."))
    v = next(v for v in ext.verdicts if v.check == "tags")
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert v.explanation == f"built for CPython {mine}; the target runs cp{other[0]}{other[1]}"


def test_pairwise_form_reuses_the_torch_layer_and_caches_by_sha256(stacks: FixtureStacks) -> None:
    # GIVEN a cache WHEN a kernel is analysed twice against one torch layer THEN the second is a hit
    cache: dict = {}  # type: ignore[type-arg]
    providers = stacks.facts(*CORE)
    (kernel,) = stacks.facts("sgl_kernel_v1")
    first = analyze_extension(kernel, providers, T, P228, cache, BUILT_IN_STACK.loading())
    again = analyze_extension(kernel, providers, T, P228, cache, BUILT_IN_STACK.loading())
    assert again is first and len(cache) == 1
    assert [u.path for u in first] == ["sgl_kernel/common_ops.abi3.so"]
    assert first[0].status == "ok"


def test_pairwise_form_agrees_with_the_full_analysis(stacks: FixtureStacks) -> None:
    providers = stacks.facts("torch_v2", "cuda13_runtime")
    (kernel,) = stacks.facts("sgl_kernel_v1")
    units = analyze_extension(kernel, providers, T, P228, None, BUILT_IN_STACK.loading())
    full = _analyze(stacks, "torch_v2", "cuda13_runtime", "sgl_kernel_v1")
    assert units[0].verdicts == next(u for u in full.units if u.path == units[0].path).verdicts


def test_set_analysis_json_carries_schema_checks_and_units(stacks: FixtureStacks) -> None:
    doc = _analyze(stacks, "torch_v2", "cuda13_runtime", "sgl_kernel_v1").to_json()
    assert (doc["schema_version"], doc["ok"], doc["checks"]["symbols"]) == (1, False, "fail")
    # units in the order the program loads them: torch (imported first), then the kernel
    assert [Path(u["path"]).name.split(".")[0] for u in doc["units"]] == ["_C", "common_ops"]


def test_module_without_code_for_the_gpu_only_warns_when_a_sibling_runs_natively(
    stacks: FixtureStacks,
) -> None:
    # GIVEN a kernel wheel whose sm120a_ops runs natively on 12.0 and whose hopper_ops carries sm_90a only
    v = _verdict(_analyze(stacks, "gpu_kernel"), "gpu_arch", "gpu_kernel/hopper_ops.abi3.so")
    # THEN hopper_ops loses only its own kernels: a warning that says why, not a failure of the wheel
    assert v.status == "warn"
    assert v.explanation == (
        "nothing runs on 12.0: carries sm_90a (only this module's kernels are missing: "
        "other extensions of gpu-kernel 0.1.0 run natively here)"
    )


def test_no_native_module_at_all_keeps_the_failure(stacks: FixtureStacks) -> None:
    # GIVEN the same wheel on 12.1, where no module has native code (ptx_ops only JIT-compiles)
    t = Target.parse(cuda="13.0", arch="sm121", python=PY, platform="manylinux_2_28_x86_64")
    v = _verdict(_analyze(stacks, "gpu_kernel", target=t), "gpu_arch", "gpu_kernel/hopper_ops.abi3.so")
    # THEN the modules without code still fail
    assert (v.status, v.explanation) == ("fail", "nothing runs on 12.1: carries sm_90a")


def test_a_symbol_binds_to_the_library_that_defines_it_not_to_libc(stacks: FixtureStacks) -> None:
    # GIVEN torch's libraries and the CUDA runtime preloaded globally, after the interpreter's libc
    sim = LoaderSimulation(stacks.facts(*CORE, "sgl_kernel_v1"), T, P228, BUILT_IN_STACK.loading())
    ops = sim.layout.objects["sgl_kernel/common_ops.abi3.so"]
    imports = {i.name: i for i in ops.facts.imports}
    # WHEN the kernel's imports are looked up THEN each names the object ld.so binds it to
    c10 = imports["_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"]
    cudart = imports["cudaRuntimeGetVersion"]
    bound = {i.name: sim.lookup(i) for i in (c10, cudart)}
    assert {name: provider_name(p) for name, p in bound.items() if p is not None} == {
        c10.name: "torch/lib/libc10.so",
        cudart.name: "nvidia/cu13/lib/libcudart.so.13",
    }
    # AND a libc function binds to libc, and a name nothing defines to nothing
    assert provider_name(sim.lookup(SymbolImport("malloc", "GLIBC_2.2.5"))) == "system:libc.so.6"  # type: ignore[arg-type]
    assert sim.lookup(SymbolImport("no_library_defines_this")) is None


def test_check_text_shows_abi_tags_and_brackets_as_written(stacks: FixtureStacks) -> None:
    import dataclasses
    import io

    from rich.console import Console

    from abiprobe.report.check_text import render_check
    from abiprobe.ui.console import print_all

    # GIVEN a failing set, and one more failure whose demangled name carries an ABI tag ([abi:cxx11])
    a = _analyze(stacks, *CORE, "old_abi_kernel")
    tagged = Verdict("symbols", "fail", "not found: wants {demangle:_ZN3foo3barB5cxx11Ev}", "pkg[x]/_ext.so")
    a = dataclasses.replace(a, set_verdicts=(*a.set_verdicts, tagged))
    # WHEN check's text is printed
    stream = io.StringIO()
    print_all(render_check(a), Console(file=stream, width=3000, color_system=None))
    out = stream.getvalue()
    # THEN the tag and the bracketed subject are printed (rich markup would have eaten both)
    assert tagged.text == "not found: wants foo::bar[abi:cxx11]()"
    assert tagged.text in out and "pkg[x]/_ext.so" in out, out
