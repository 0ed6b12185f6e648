"""The loader's first error, predicted statically, against real imports of sets built so that it is
neither the first failure in file order nor in alphabetical order (see support.first_error_wheels)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.first_error_wheels import FirstErrorWheels, build_first_error_wheels
from support.held import BUILT_IN_UNREAD

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.first_error import matches_loader_line
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.probe import ProbeOptions, ProbeResult, ProbeSet, probe_sets

BUILT_IN_STACK = default_stack()

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")
EXPECTED = {
    "needed": "ImportError: libzz_absent.so.1: cannot open shared object file: No such file or directory",
    "symbol": "ImportError: <site-packages>/fe_symbol/libdep.so: undefined symbol: zeta_data",
    "version": "ImportError: <site-packages>/fe_version/libver.so.1: version `VER_2' not found "
    "(required by <site-packages>/fe_version/_ext.abi3.so)",
}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> FirstErrorWheels:
    return build_first_error_wheels(tmp_path_factory.mktemp("first-error"))


def _predicted(wheel: Path) -> str | None:
    analysis = analyze_set(
        [wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)], TARGET, PROFILE, stack=BUILT_IN_STACK
    )
    first = analysis.first_error
    return first.text if first is not None else None


@pytest.fixture(scope="module")
def probed(wheels: FirstErrorWheels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProbeResult]:
    sets = [
        ProbeSet((path,), (f"fe_{name}",), name, expected="fail", expected_message=_predicted(path))
        for name, path in (("needed", wheels.needed), ("symbol", wheels.symbol), ("version", wheels.version))
    ]
    options = ProbeOptions(timeout=10, fork="never", jobs=2, temp_dir=tmp_path_factory.mktemp("fe-probe"))
    return {r.label: r for r in probe_sets(sets, options)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_predicted_first_message_is_the_loaders(
    name: str, wheels: FirstErrorWheels, probed: dict[str, ProbeResult]
) -> None:
    # GIVEN a set with several load failures; WHEN analysed statically
    predicted = _predicted(getattr(wheels, name))
    # THEN the first message is the one ld.so reports, and a real import prints exactly that
    assert predicted == EXPECTED[name]
    real = probed[name]
    assert (real.outcome != "ok", real.message_agrees) == (True, True), real.message


def test_the_full_list_still_names_every_failure(wheels: FirstErrorWheels) -> None:
    analysis = analyze_set(
        [wheel_facts_from_path(wheels.symbol, unread_sources=BUILT_IN_UNREAD)],
        TARGET,
        PROFILE,
        stack=BUILT_IN_STACK,
    )
    (symbols,) = [v for v in analysis.verdicts if v.check == "symbols"]
    named = {m["symbol"] for m in symbols.evidence["missing"]}
    assert named == {"aardvark_missing", "alpha_fn", "zeta_data"}
    assert symbols.evidence["loader_message"]["text"] == EXPECTED["symbol"]


def test_a_real_line_matches_only_its_own_prediction() -> None:
    line = "fe_symbol/libdep.so: undefined symbol: zeta_data"
    assert matches_loader_line(EXPECTED["symbol"], line)
    assert not matches_loader_line(EXPECTED["symbol"], "fe_symbol/libdep.so: undefined symbol: alpha_fn")
    assert matches_loader_line(
        "ImportError: <libdir>/libc.so.6: version `GLIBC_2.99' not found "
        "(required by <site-packages>/a/b.so)",
        "/lib64/libc.so.6: version `GLIBC_2.99' not found (required by a/b.so)",
    )
