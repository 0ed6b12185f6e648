"""Target parsing, the driver table and wheel tags computed for the target rather than the host."""

from __future__ import annotations

import pytest

from abiprobe.errors import UsageError
from abiprobe.model.cuda_arch import GpuArch
from abiprobe.model.target import (
    Target,
    driver_cuda,
    driver_ptx_isa,
    parse_cuda_version,
    parse_driver_version,
)


def test_parse_builds_every_field_from_command_line_strings() -> None:
    # GIVEN command-line strings WHEN parsed THEN each field is typed
    t = Target.parse(
        cuda="cu130", arch="sm_120a", python="cp312", platform="manylinux_2_34_x86_64", driver="580.95"
    )
    assert (t.cuda, t.arch, t.python, t.implementation) == ((13, 0), GpuArch(12, 0, "a"), (3, 12), "cp")
    assert (t.platform, t.glibc, t.machine, t.driver) == (
        "manylinux_2_34_x86_64",
        (2, 34),
        "x86_64",
        (580, 95),
    )


def test_bare_machine_name_means_manylinux_2_28() -> None:
    t = Target(platform="aarch64")
    assert (t.platform, t.glibc, t.machine) == ("manylinux_2_28_aarch64", (2, 28), "aarch64")


def test_legacy_manylinux2014_alias_is_normalised_to_glibc_2_17() -> None:
    assert Target(platform="manylinux2014_x86_64").glibc == (2, 17)


@pytest.mark.parametrize("text", ["13.x", "sm120", ""])
def test_bad_cuda_version_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="not a CUDA version"):
        parse_cuda_version(text)


def test_bad_platform_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not a Linux platform tag"):
        Target(platform="win_amd64")


def test_driver_table_maps_a_driver_to_the_newest_cuda_and_ptx_isa() -> None:
    # GIVEN drivers just at and just below the CUDA 12.4 minimum (550.54.14)
    assert driver_cuda(parse_driver_version("550.54.14")) == (12, 4)
    assert driver_cuda(parse_driver_version("550.54.13")) == (12, 3)
    assert driver_ptx_isa(parse_driver_version("580.95.05")) == (9, 0)
    assert driver_cuda((400,)) is None


def test_without_a_driver_the_target_cuda_bounds_the_driver_api() -> None:
    assert Target(cuda=(12, 8)).driver_cuda == (12, 8)
    assert Target(cuda=(13, 0), driver=(535, 54, 3)).driver_cuda == (12, 2)


def test_supported_tags_are_computed_for_the_target_python_not_the_host() -> None:
    # GIVEN a cp39 target WHEN asking for tags THEN cp39, abi3 and py3 tags appear, best first
    tags = [str(t) for t in Target(python=(3, 9), platform="manylinux_2_28_x86_64").supported_tags()]
    assert tags[0] == "cp39-cp39-manylinux_2_28_x86_64"
    assert "cp39-abi3-manylinux2014_x86_64" in tags
    assert "cp36-abi3-linux_x86_64" in tags
    assert tags[-1] == "py30-none-any"
    assert not any(t.startswith(("cp310", "cp311", "cp312")) for t in tags)


def test_accepts_tag_respects_the_target_glibc_and_python() -> None:
    t = Target(python=(3, 12), platform="manylinux_2_28_x86_64")
    assert t.accepts_tag("cp310-abi3-manylinux_2_28_x86_64")
    assert t.accepts_tag("cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64")
    assert not t.accepts_tag("cp312-cp312-manylinux_2_34_x86_64")
    assert not t.accepts_tag("cp311-cp311-manylinux_2_28_x86_64")
    assert not t.accepts_tag("cp312-cp312-manylinux_2_28_aarch64")


def test_key_names_every_field() -> None:
    t = Target.parse(
        cuda="13.0", arch="sm120", python="cp312", platform="manylinux_2_28_x86_64", driver="580.95"
    )
    assert t.key() == "cu13.0-sm_120-cp312-manylinux_2_28_x86_64-drv580.95"


def test_from_host_reads_this_interpreter() -> None:
    import sys

    t = Target.from_host()
    assert t.python == sys.version_info[:2]
    assert t.arch is None and t.driver is None


def test_an_unknown_compute_capability_is_refused_with_the_known_ones() -> None:
    with pytest.raises(
        UsageError, match=r"unknown GPU architecture 'sm_999': abiprobe knows sm_35, .*sm_120, sm_121$"
    ):
        Target.parse(cuda="13.0", arch="sm_999")
    with pytest.raises(UsageError, match=r"no 'a' variant of 8\.9: there are sm_90a, "):
        Target.parse(cuda="13.0", arch="sm_89a")
    assert Target.parse(cuda="13.0", arch="sm_120f").arch is not None


def test_solve_with_an_unknown_arch_exits_2_naming_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    from abiprobe.cli import main

    assert main(["solve", "--arch", "sm_999", "--no-write"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("abiprobe: error: unknown GPU architecture 'sm_999'") and "sm_90, sm_100" in err
