"""`abiprobe check` end to end over real fixture wheels: exit bits, JSON document, human table."""

from __future__ import annotations

import json
import sys

import pytest
from support.schemas import assert_valid
from support.stacks import FixtureStacks, fixture_stacks

from abiprobe.cli import main

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = ["--cuda", "13.0", "--arch", "sm120", "--python", PY, "--platform", "manylinux_2_28_x86_64"]


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> FixtureStacks:
    return fixture_stacks(tmp_path_factory.mktemp("stacks"))


def _check(stacks: FixtureStacks, *keys: str, extra: tuple[str, ...] = ()) -> int:
    return main(["check", *map(str, stacks.paths(*keys)), *TARGET, *extra])


def test_passing_set_exits_zero_and_names_its_status(
    stacks: FixtureStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    # the kernel binds to torch's symbols without pinning torch: a warning, which passes
    assert _check(stacks, "torch_v1", "cuda13_runtime", "sgl_kernel_v1") == 0
    out = capsys.readouterr().out
    assert "\nWARN " in out and "requires warn" in out


def test_signature_change_sets_the_undefined_symbol_bit(
    stacks: FixtureStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(stacks, "torch_v2", "cuda13_runtime", "sgl_kernel_v1") == 8
    out = capsys.readouterr().out
    assert "signature changed" in out and "FAIL" in out


def test_several_failures_or_their_bits(stacks: FixtureStacks) -> None:
    # GIVEN a system library the target lacks (4), a too-new glibc version (16) and a metadata mismatch (64)
    code = _check(stacks, "torch_v1", "cuda13_runtime", "numa_user", "new_glibc", "sgl_kernel_label")
    # THEN the exit status carries exactly those bits (numa_available, undefined without libnuma.so.1, is
    # the same system condition: 4, not 8)
    assert code == 4 | 16 | 64


def test_json_output_is_the_set_analysis(stacks: FixtureStacks, capsys: pytest.CaptureFixture[str]) -> None:
    code = _check(stacks, "torch_v1", "cuda13_runtime", "cu12_kernel", extra=("--json",))
    doc = assert_valid(json.loads(capsys.readouterr().out), "check")
    assert (code, doc["ok"], doc["checks"]["sonames"]) == (4 | 8, False, "fail")
    assert doc["target"] == f"cu13.0-sm_120-{PY}-manylinux_2_28_x86_64"
    assert doc["profile"] == "manylinux_2_28_x86_64"


def test_profile_option_accepts_a_builtin_name(stacks: FixtureStacks) -> None:
    code = _check(
        stacks, "torch_v1", "cuda13_runtime", "new_glibc", extra=("--profile", "manylinux_2_34_x86_64")
    )
    assert code == 0


def test_driver_option_gates_driver_api_symbols(stacks: FixtureStacks) -> None:
    assert _check(stacks, "driver_user", extra=("--driver", "535.54.03")) == 16


def test_no_items_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", *TARGET]) == 2
    assert "nothing to check" in capsys.readouterr().err


def test_unknown_item_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "./no-such-thing", *TARGET]) == 2
    assert "./no-such-thing: not a .whl file" in capsys.readouterr().err
