"""Every shared object a package loads is a unit: fixture wheels for each way torch extensions load their
code, judged statically and compared with real imports (support.loading_wheels)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.held import BUILT_IN_UNREAD
from support.loading_wheels import LoadingWheels, build_loading_wheels

from abiprobe.analyze.analysis import SetAnalysis, UnitAnalysis, analyze_set
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
SETS = {
    "visionx": (("torch", "visionx"), ("torch", "visionx")),
    "audiox": (("audiox",), ("audiox",)),
    "audiox_nopreload": (("audiox_nopreload",), ("audiox",)),
    "lazyx": (("lazyx",), ("lazyx",)),
}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> LoadingWheels:
    return build_loading_wheels(tmp_path_factory.mktemp("loading"))


def _analyze(wheels: LoadingWheels, name: str) -> SetAnalysis:
    return analyze_set(
        [wheel_facts_from_path(getattr(wheels, k), unread_sources=BUILT_IN_UNREAD) for k in SETS[name][0]],
        TARGET,
        PROFILE,
        stack=BUILT_IN_STACK,
    )


def _unit(a: SetAnalysis, path: str) -> UnitAnalysis:
    return next(u for u in a.units if u.path == path)


@pytest.fixture(scope="module")
def probed(wheels: LoadingWheels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProbeResult]:
    sets = []
    for name, (keys, order) in SETS.items():
        a = _analyze(wheels, name)
        message = a.first_error.text if a.first_error and a.import_status == "fail" else None
        paths = tuple(getattr(wheels, k) for k in keys)
        sets.append(ProbeSet(paths, order, name, expected=a.import_status, expected_message=message))
    options = ProbeOptions(timeout=20, fork="never", jobs=2, temp_dir=tmp_path_factory.mktemp("units-probe"))
    return {r.label: r for r in probe_sets(sets, options)}


def test_plain_library_loaded_by_torch_ops_load_library_is_judged(
    wheels: LoadingWheels, probed: dict[str, ProbeResult]
) -> None:
    # GIVEN visionx, whose extension module loads _C.so (no PyInit_) through torch.ops.load_library
    a = _analyze(wheels, "visionx")
    unit = _unit(a, "visionx/_C.so")
    # THEN _C.so is a unit loaded at import, from the helper its module calls, and its symbol is missing
    assert (unit.kind, unit.timing, unit.where) == ("library", "import", "visionx/extension.py line 7")
    assert (unit.status, a.import_status) == ("fail", "fail")
    assert a.first_error is not None
    assert (
        a.first_error.text
        == "OSError: <site-packages>/visionx/_C.so: undefined symbol: visionx_missing_kernel"
    )
    # AND a real import fails with exactly that line
    real = probed["visionx"]
    assert (real.outcome, real.disagrees, real.message_agrees) == ("undefined_symbol", False, True)


def test_preloaded_library_satisfies_a_siblings_needed_entry_without_runpath(
    wheels: LoadingWheels, probed: dict[str, ProbeResult]
) -> None:
    # GIVEN audiox, whose __init__ loads lib/libaudiox.so by path before importing _audiox (no RUNPATH)
    a = _analyze(wheels, "audiox")
    # THEN both are units, in the package's order, and the extension's DT_NEEDED is met by the loaded soname
    assert [(u.path, u.kind, u.timing) for u in a.units] == [
        ("audiox/lib/libaudiox.so", "library", "import"),
        ("audiox/_audiox.abi3.so", "extension", "import"),
    ]
    assert (a.import_status, a.status) == ("ok", "ok")
    # AND without the preload line the same extension cannot find it, as the loader says
    b = _analyze(wheels, "audiox_nopreload")
    assert [u.path for u in b.units] == ["audiox/_audiox.abi3.so"]
    assert b.first_error is not None
    assert (
        b.first_error.text
        == "ImportError: libaudiox.so: cannot open shared object file: No such file or directory"
    )
    # AND real imports agree with both
    assert (probed["audiox"].outcome, probed["audiox"].disagrees) == ("ok", False)
    lacking = probed["audiox_nopreload"]
    assert (lacking.outcome, lacking.disagrees, lacking.message_agrees) == ("missing_soname", False, True)


def test_lazily_loaded_library_fails_on_first_use_not_at_import(
    wheels: LoadingWheels, probed: dict[str, ProbeResult], tmp_path: Path
) -> None:
    # GIVEN lazyx, whose kernels() loads libkernels.so, which needs an absent library
    a = _analyze(wheels, "lazyx")
    unit = _unit(a, "lazyx/libkernels.so")
    # THEN the library fails on first use, said so; importing the package passes
    assert (unit.timing, unit.status, a.import_status) == ("first_use", "fail", "ok")
    (sonames,) = [v for v in unit.verdicts if v.check == "sonames"]
    assert sonames.explanation.endswith("(on first use: loaded lazily by lazyx/__init__.py line 8, "
                                        "not by importing the package)")  # fmt: skip
    # AND a real import passes, and a real first use fails with the predicted line
    assert (probed["lazyx"].outcome, probed["lazyx"].disagrees) == ("ok", False)
    site = tmp_path / "site"
    zipfile.ZipFile(wheels.lazyx).extractall(site)
    code = "import lazyx; lazyx.kernels()"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(site)}
    )
    last = run.stderr.strip().splitlines()[-1].replace(f"{site}/", "")
    assert a.first_error is not None and matches_loader_line(a.first_error.text, last), last
