"""Stack definition, candidate filtering and CUDA-variant inference, provider conflicts: pure units."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from abiprobe.errors import UsageError
from abiprobe.model.candidate import IndexFile, candidates_from_files
from abiprobe.model.cuda_variant import infer_variant, variant_from_label, variant_from_requirements
from abiprobe.model.facts import DistMetadata, ElfFacts, WheelFacts
from abiprobe.model.stack import default_stack, load_stack_file
from abiprobe.model.target import Target
from abiprobe.model.verdict import Status
from abiprobe.solve.candidates import FilterOptions, StackCandidate, prefilter
from abiprobe.solve.matrix import Group
from abiprobe.solve.resolver import build_picks, resolve

BUILT_IN_STACK = default_stack()

TARGET = Target(cuda=(13, 0), python=(3, 12), platform="manylinux_2_28_x86_64")


def cands(*filenames: str, **file_options: object) -> list:  # type: ignore[type-arg]
    files = [
        IndexFile(
            filename=f,
            url=f"http://x/{f}",
            hashes={"sha256": hashlib.sha256(f.encode()).hexdigest()},
            **file_options,
        )  # type: ignore[arg-type]
        for f in filenames
    ]
    return list(candidates_from_files(files)[0])


def facts(
    name: str, version: str, requires: tuple[str, ...] = (), needed: tuple[str, ...] = ()
) -> WheelFacts:
    elf = (ElfFacts(path=f"{name}/_x.so", elf_class=64, machine="x86_64", needed=needed),) if needed else ()
    return WheelFacts(
        filename=f"{name}-{version}.whl",
        sha256="0" * 64,
        size=1,
        metadata=DistMetadata(name=name, version=version, requires_dist=requires),
        elf=elf,
    )


def test_default_stack_has_torch_kernel_under_both_names_and_flashinfer_companions() -> None:
    stack = default_stack()
    assert stack.roles == ("torch", "kernel", "flashinfer")
    assert stack.member("kernel").names == ("sglang-kernel", "sgl-kernel")
    companions = [c.name for c in stack.member("flashinfer").companions]
    assert companions == ["flashinfer-cubin", "flashinfer-jit-cache"]


def test_constraint_narrows_the_member_that_owns_the_name() -> None:
    stack = default_stack().with_constraint("sgl-kernel>=0.3").with_constraint("torch<3")
    assert str(stack.member("kernel").specifier) == ">=0.3"
    assert str(stack.member("torch").specifier) == "<3"


def test_with_adds_a_new_role() -> None:
    assert default_stack().with_package("nixl>=0.5").roles[-1] == "nixl"


def test_constraint_on_a_name_outside_the_stack_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="numpy is not in the stack"):
        default_stack().with_constraint("numpy<2")


def test_stack_file_adds_packages_and_constraints(tmp_path: Path) -> None:
    path = tmp_path / "stack.toml"
    path.write_text('[stack]\nwith = ["nixl"]\nconstraints = ["torch>=2.9"]\n')
    stack = load_stack_file(path)
    assert (stack.roles[-1], str(stack.member("torch").specifier)) == ("nixl", ">=2.9")


def test_label_cu128_means_cuda_12() -> None:
    assert variant_from_label(Version("2.9.1+cu128")).majors == (12,)


def test_label_cpu_is_not_a_cuda_candidate() -> None:
    assert not variant_from_label(Version("2.9.1+cpu")).fits(13)


def test_metadata_cuda_toolkit_pin_means_cuda_13() -> None:
    from packaging.requirements import Requirement

    v = variant_from_requirements([Requirement("cuda-toolkit[cudart]==13.0.2")])
    assert v.majors == (13,)


def test_open_lower_bound_on_a_cuda_meta_project_says_nothing_about_the_major() -> None:
    # flashinfer-python 0.7.x on the default index requires cuda-python>=12.0, which CUDA 13 releases satisfy
    from packaging.requirements import Requirement

    v = variant_from_requirements(
        [Requirement("cuda-python>=12.0"), Requirement("nvidia-cuda-runtime>=12.8")]
    )
    assert v.majors == ()


def test_a_range_inside_one_major_pins_it() -> None:
    from packaging.requirements import Requirement

    assert variant_from_requirements([Requirement("cuda-python>=13.0.3,<14")]).majors == (13,)


def test_unlabelled_wheel_needing_cuda12_sonames_is_cuda_12() -> None:
    c = cands("sgl_kernel-0.3.21-cp310-abi3-manylinux_2_28_x86_64.whl")[0]
    v = infer_variant(c, facts("sgl-kernel", "0.3.21", needed=("libcudart.so.12",)), TARGET)
    assert (v.majors, v.describe()) == ((12,), "built for CUDA 12 (needs libcudart.so.12)")


def test_nvidia_cu12_requirement_under_a_foreign_marker_is_ignored() -> None:
    c = cands("x-1.0-py3-none-any.whl")[0]
    f = facts("x", "1.0", requires=('nvidia-cublas-cu12; platform_machine == "aarch64"',))
    assert infer_variant(c, f, TARGET).majors == ()


def test_prefilter_keeps_the_best_tag_per_version_newest_first() -> None:
    listed = cands(
        "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.9.0-cp312-cp312-manylinux_2_17_x86_64.whl",
        "torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.9.0-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.9.0-cp312-cp312-manylinux_2_28_aarch64.whl",
    )
    kept, excluded = prefilter("torch", listed, default_stack().base.specifier, TARGET, FilterOptions())
    assert [k.filename for k in kept] == [
        "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl",
    ]
    assert [e.check for e in excluded] == ["tags", "tags"]


def test_prefilter_allows_prereleases_with_pre() -> None:
    listed = cands("torch-2.10.0rc1-cp312-cp312-manylinux_2_28_x86_64.whl")
    kept, _ = prefilter("torch", listed, default_stack().base.specifier, TARGET, FilterOptions(pre=True))
    assert [str(k.version) for k in kept] == ["2.10.0rc1"]


class FixedCompat:
    """Compatibility from a table: (earlier id, later id) -> status."""

    def __init__(self, table: dict[tuple[str, str], Status]) -> None:
        self.table = table

    def alone(self, group: Group) -> tuple[Status, str]:
        return "ok", ""

    def together(self, earlier: Group, later: Group) -> tuple[Status, str]:
        status = self.table.get((earlier.id, later.id), "ok")
        return status, "undefined symbol" if status == "fail" else ""


def group(role: str, filename: str) -> Group:
    c = cands(filename)[0]
    return Group(role, StackCandidate(role, c, 0))


def test_resolver_backtracks_to_an_older_torch_when_the_kernel_fails_with_the_newest() -> None:
    stack = default_stack()
    stack = type(stack)(stack.members[:2])
    groups = {
        "torch": (
            group("torch", "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
            group("torch", "torch-2.8.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
        ),
        "kernel": (group("kernel", "sgl_kernel-0.3.0-cp310-abi3-manylinux_2_28_x86_64.whl"),),
    }
    compat = FixedCompat({("torch==2.9.0", "sgl-kernel==0.3.0"): "fail"})
    result = resolve(stack, build_picks(stack, groups, TARGET, compat), TARGET)
    assert result.chosen == {"torch": "torch==2.8.0", "kernel": "sgl-kernel==0.3.0"}


def test_no_set_names_the_verdict_that_ruled_out_each_near_miss() -> None:
    stack = type(default_stack())(default_stack().members[:2])
    groups = {
        "torch": (group("torch", "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl"),),
        "kernel": (group("kernel", "sgl_kernel-0.3.0-cp310-abi3-manylinux_2_28_x86_64.whl"),),
    }
    compat = FixedCompat({("torch==2.9.0", "sgl-kernel==0.3.0"): "fail"})
    result = resolve(stack, build_picks(stack, groups, TARGET, compat), TARGET)
    assert result.chosen is None
    assert result.conflicts == (
        "the stack needs torch: stack role torch",
        "sgl-kernel==0.3.0: no torch candidate passes static checks with it; ruled out torch==2.9.0: "
        "undefined symbol",
    )


def chosen_projects(chosen: dict[str, str] | None) -> list[str]:
    """The project of every chosen ``name==version`` (chosen is keyed by role, not by project)."""
    return sorted(canonicalize_name(pin.partition("==")[0]) for pin in (chosen or {}).values())


def _two_kernel_names() -> dict[str, tuple[Group, ...]]:
    return {
        "torch": (group("torch", "torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl"),),
        "kernel": (
            group("kernel", "sglang_kernel-0.4.0-cp310-abi3-manylinux_2_28_x86_64.whl"),
            group("kernel", "sgl_kernel-0.3.0-cp310-abi3-manylinux_2_28_x86_64.whl"),
        ),
    }


def test_kernel_role_never_picks_both_names() -> None:
    stack = type(default_stack())(default_stack().members[:2])
    result = resolve(stack, build_picks(stack, _two_kernel_names(), TARGET, FixedCompat({})), TARGET)
    assert result.chosen == {"torch": "torch==2.9.0", "kernel": "sglang-kernel==0.4.0"}
    assert "sgl-kernel" not in chosen_projects(result.chosen)


def test_kernel_role_falls_back_to_the_old_name_when_the_new_one_fails() -> None:
    # the same groups, with sglang-kernel ruled out: the role takes sgl-kernel, and chosen_projects sees it
    stack = type(default_stack())(default_stack().members[:2])
    compat = FixedCompat({("torch==2.9.0", "sglang-kernel==0.4.0"): "fail"})
    result = resolve(stack, build_picks(stack, _two_kernel_names(), TARGET, compat), TARGET)
    assert chosen_projects(result.chosen) == ["sgl-kernel", "torch"]


def test_providers_rank_exact_then_family_then_unsuffixed_nearest_first() -> None:
    from abiprobe.model.arch_ranking import ranked_arch_wheels
    from abiprobe.model.cuda_arch import parse_arch

    tags = ["sm80", "sm89", "sm90a", "sm100a", "sm103a", "sm120", "sm120f", "sm121", "sm121a"]
    assert [p.tag for p in ranked_arch_wheels(tags, parse_arch("sm_121"))] == [
        "sm121a",
        "sm120f",
        "sm121",
        "sm120",
    ]
    assert [p.tag for p in ranked_arch_wheels(tags, parse_arch("sm_120"))] == ["sm120f", "sm120"]
    assert [p.tag for p in ranked_arch_wheels(tags, parse_arch("sm_90"))] == ["sm90a"]
    # sm100a's SASS runs on exactly 10.0, never on 10.3; sm80's on every 8.x
    assert [p.tag for p in ranked_arch_wheels(tags, parse_arch("sm_103"))] == ["sm103a"]
    assert [p.tag for p in ranked_arch_wheels(tags, parse_arch("sm_86"))] == ["sm80"]


def test_every_provider_of_a_shim_belongs_to_its_role_by_name() -> None:
    stack = default_stack()
    # known providers and any other tag the shim's prefix names (a provider published later)
    assert stack.role_of("flashinfer-jit-cache-sm120f") == "flashinfer"
    assert stack.role_of("flashinfer_jit_cache_sm107a") == "flashinfer"
    assert stack.role_of("flashinfer-jit-cache-smx") is None
    rule = stack.version_rules("flashinfer-jit-cache-sm121a")
    assert rule is not None
    assert (rule.core, rule.shim, rule.match) == ("flashinfer-python", "flashinfer-jit-cache", "public")
    cubin = stack.version_rules("flashinfer-cubin")
    assert cubin is not None and cubin.match == "exact"


def test_a_stack_file_declares_a_shim_and_its_providers(tmp_path: Path) -> None:
    path = tmp_path / "stack.toml"
    path.write_text(
        "[stack]\nmembers = [\n"
        ' {role = "torch", names = ["torch"]},\n'
        ' {role = "fi", names = ["fi-core"], companions = [{name = "fi-cache", providers = '
        '{prefix = "fi-cache-", tags = ["sm90a", "sm120f"]}}]},\n]\n'
    )
    stack = load_stack_file(path)
    assert stack.role_of("fi-cache-sm120f") == "fi"
    assert stack.to_json()[1]["companions"][0]["providers"] == {
        "prefix": "fi-cache-",
        "tags": ["sm90a", "sm120f"],
    }


def test_a_stack_file_with_a_bad_provider_tag_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "stack.toml"
    path.write_text(
        '[stack]\nmembers = [{role = "fi", names = ["fi-core"], companions = [{name = "fi-cache", '
        'providers = {prefix = "fi-cache-", tags = ["hopper"]}}]}]\n'
    )
    with pytest.raises(UsageError, match="provider tags look like sm90a, not 'hopper'"):
        load_stack_file(path)


def test_a_stack_file_that_is_not_toml_is_one_line_naming_it(tmp_path: Path) -> None:
    # GIVEN a stack file with a TOML syntax error WHEN it is loaded (through the one TOML reader)
    path = tmp_path / "stack.toml"
    path.write_text("[stack\nmembers = 1\n")
    # THEN the error is one usage line naming the file
    with pytest.raises(UsageError, match=r"stack file .*stack\.toml: invalid TOML") as caught:
        load_stack_file(path)
    assert "\n" not in str(caught.value)


def test_an_installed_environment_scope_roots_at_the_stack_and_its_installed_providers() -> None:
    from abiprobe.analyze.scope import requirement_closure, stack_roots

    # GIVEN an environment with a legacy shim, a provider nothing requires, and an unrelated package
    wheels = [
        facts("flashinfer-python", "0.7.0"),
        facts("flashinfer-jit-cache", "0.7.0+cu130"),
        facts("flashinfer-jit-cache-sm107a", "0.7.0+cu130"),
        facts("mpilike", "4.0"),
    ]
    # THEN the check's scope holds flashinfer, its shim and that provider (by the shim's prefix), not mpilike
    scope = requirement_closure(wheels, stack_roots(wheels, BUILT_IN_STACK), Target.parse(cuda="13.0"))
    assert sorted(scope) == ["flashinfer-jit-cache", "flashinfer-jit-cache-sm107a", "flashinfer-python"]
