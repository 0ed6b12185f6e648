"""What a package computes before it loads native code, followed (issue 26): a list of libraries from a
data file of the wheel, a version guard, a load reached from a method on first use. Each fixture
(support.data_wheels) is judged statically and imported for real."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.data_wheels import DataWheels, build_data_wheels, build_homename, build_nvmluser
from support.held import BUILT_IN_UNREAD
from support.probe_wheels import TAG
from support.venvs import run_unpacked
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import SetAnalysis, UnitAnalysis, analyze_set
from abiprobe.analyze.first_error import matches_loader_line
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

BUILT_IN_STACK = default_stack()

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = Target.parse(cuda="13.0", arch="sm90", python=PY, platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> DataWheels:
    return build_data_wheels(tmp_path_factory.mktemp("data"))


def _analyze(wheels: DataWheels, name: str) -> SetAnalysis:
    return analyze_set(
        [
            wheel_facts_from_path(p, unread_sources=BUILT_IN_UNREAD)
            for p in (wheels.torch, getattr(wheels, name))
        ],
        TARGET,
        PROFILE,
        stack=BUILT_IN_STACK,
    )


def _run(wheels: DataWheels, name: str, code: str, site: Path) -> tuple[int, str]:
    """Install the fixture torch and the package into one directory and run ``code`` for real: the exit
    status and the last line Python printed, paths cut to their site-packages form."""
    run = run_unpacked(site, (wheels.torch, getattr(wheels, name)), code)
    lines = run.stderr.strip().splitlines()
    return run.returncode, "\n".join(lines).replace(f"{site}/", "")


def _units(a: SetAnalysis, dist: str) -> list[UnitAnalysis]:
    return [u for u in a.units if u.dist.startswith(f"{dist} ")]


def test_a_list_read_from_a_data_file_of_the_wheel_loads_in_order_and_fails_on_the_first_bad_one(
    wheels: DataWheels, tmp_path: Path
) -> None:
    # GIVEN datalist, which loads the libraries listed for each data/target.*.json the wheel has (only
    # "default": libdl_first, then libdl_second, which has an undefined symbol), re-raising a failure
    a = _analyze(wheels, "datalist")
    # THEN both are import units in that order (the "extra" target's library is none), and importing
    # fails with the loader's line for libdl_second
    units = [(u.path, u.status) for u in _units(a, "datalist") if u.kind != "raise"]
    assert units == [("datalist/libdl_first.so", "ok"), ("datalist/libdl_second.so", "warn")]  # re-raised:
    assert [u.status for u in _units(a, "datalist") if u.kind == "raise"] == ["fail"]  # the re-raise
    assert "datalist/libdl_extra.so" not in [u.path for u in a.units]
    assert a.import_status == "fail" and a.first_error is not None
    assert (
        a.first_error.text
        == "OSError: <site-packages>/datalist/libdl_second.so: undefined symbol: dl_missing"
    )
    # AND a real import fails with that line
    code, out = _run(wheels, "datalist", "import datalist", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, out.splitlines()[-1]), out


def test_a_value_from_the_data_file_reaches_the_helper_that_decides_whether_a_failure_raises(
    wheels: DataWheels, tmp_path: Path
) -> None:
    # GIVEN datalist_docs: the same code, its data file's variant "docs" (the helper swallows failures)
    a = _analyze(wheels, "datalist_docs")
    # THEN libdl_second still fails, caught, and the import passes
    second = next(u for u in a.units if u.path == "datalist/libdl_second.so")
    assert second.status == "fail" and second.timing == "optional"
    assert a.import_status == "ok"
    # AND a real import passes
    assert _run(wheels, "datalist_docs", "import datalist", tmp_path)[0] == 0


def test_a_version_guard_that_skips_loading_leaves_its_libraries_out(
    wheels: DataWheels, tmp_path: Path
) -> None:
    # GIVEN guard_skip, built for torch 2.8.0: with torch 2.9.0 its own test skips its _C*.so
    a = _analyze(wheels, "guard_skip")
    # THEN no unit loads _C.abi3.so (not at import, not on first use), and the set is not unknown
    assert [u.path for u in _units(a, "guard_skip")] == []
    assert a.import_status == "ok"
    assert not [v for v in a.set_verdicts if v.subject.startswith("guard_skip") and v.status == "unknown"]
    # AND a real import passes, saying it skipped
    code, out = _run(wheels, "guard_skip", "import guard_skip", tmp_path)
    assert code == 0 and "Skipping import of cpp extensions" in out, out


def test_a_version_guard_that_allows_loading_loads_its_glob(wheels: DataWheels, tmp_path: Path) -> None:
    # GIVEN guard_load, built for torch 2.9.0 (the set's): its own test passes and it loads _C*.so
    a = _analyze(wheels, "guard_load")
    # THEN _C.abi3.so is an import unit, and its undefined symbol fails the import
    (unit,) = _units(a, "guard_load")
    assert (unit.path, unit.timing, unit.status) == ("guard_load/_C.abi3.so", "import", "fail")
    assert a.first_error is not None
    assert (
        a.first_error.text
        == "OSError: <site-packages>/guard_load/_C.abi3.so: undefined symbol: guard_missing"
    )
    # AND a real import fails with that line
    code, out = _run(wheels, "guard_load", "import guard_load", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, out.splitlines()[-1]), out


def test_a_library_a_method_loads_on_first_use_is_judged_and_does_not_fail_the_import(
    wheels: DataWheels, tmp_path: Path
) -> None:
    # GIVEN methodload: init() makes a Runtime whose __init__ calls self.load_dll(bin/core.so), which
    # needs an absent library
    a = _analyze(wheels, "methodload")
    # THEN core.so is judged on first use (its failure is the package's candidate), and the package's own
    # RuntimeError is what first use fails with; importing passes
    (unit,) = [u for u in _units(a, "methodload") if u.path == "methodload/bin/core.so"]
    assert unit.timing in ("first_use", "optional") and unit.status in ("warn", "fail")
    assert any("libcudart_gone.so.12 not found" in v.explanation for v in unit.verdicts)
    (raised,) = [u for u in _units(a, "methodload") if u.kind == "raise"]
    assert (raised.timing, raised.status) == ("first_use", "fail")
    assert "RuntimeError: Failed to load the shared library" in raised.verdicts[0].explanation
    assert a.import_status == "ok"
    # AND for real: the import passes, init() fails with that error, caused by that library
    assert _run(wheels, "methodload", "import methodload", tmp_path)[0] == 0
    code, out = _run(wheels, "methodload", "import methodload; methodload.init()", tmp_path)
    assert code != 0 and "RuntimeError: Failed to load the shared library" in out.splitlines()[-1], out
    assert "libcudart_gone.so.12: cannot open shared object file" in out, out


def test_a_name_read_from_a_file_outside_the_wheel_is_unknown_with_file_line_and_expression(
    wheels: DataWheels, tmp_path: Path
) -> None:
    # GIVEN homename, which reads its library's name from a file in the user's home at import
    wheel = build_homename(tmp_path / "build")
    facts = wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)
    a = analyze_set(
        [wheel_facts_from_path(wheels.torch, unread_sources=BUILT_IN_UNREAD), facts],
        TARGET,
        PROFILE,
        stack=BUILT_IN_STACK,
    )
    # THEN the unit is unknown, named by file, line and expression; the set is not ok
    (unit,) = _units(a, "homename")
    assert (unit.status, unit.timing, unit.where) == ("unknown", "import", "homename/__init__.py line 8")
    assert "ctypes.CDLL(os.path.join(_HERE, _NAME))" in unit.verdicts[0].explanation
    assert (a.status, a.import_status) == ("unknown", "unknown")
    # AND a real import does not pass (no such file here): ok would have been wrong
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    code, out = _run(wheels, "torch", "import homename", tmp_path / "site")
    assert code != 0 and "homename-abiprobe.json" in out, out


def test_the_drivers_nvml_needed_by_a_library_is_there_on_a_gpu_target(
    wheels: DataWheels, tmp_path: Path
) -> None:
    # GIVEN nvmluser, whose library needs libnvidia-ml.so.1 (installed with the NVIDIA driver) by DT_NEEDED
    wheel, stub_dir = build_nvmluser(tmp_path / "build")
    torch = wheel_facts_from_path(wheels.torch, unread_sources=BUILT_IN_UNREAD)
    a = analyze_set(
        [torch, wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)],
        TARGET,
        PROFILE,
        stack=BUILT_IN_STACK,
    )
    # THEN on a GPU target the library loads
    (unit,) = _units(a, "nvmluser")
    assert (unit.path, unit.status) == ("nvmluser/libuses_nvml.so", "ok")
    # AND for real, on a host with the driver's library (a stub of it here), the import passes
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    run = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); import nvmluser"],
        capture_output=True, text=True, env={"LD_LIBRARY_PATH": str(stub_dir)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


def test_what_the_packages_own_tests_load_is_no_unit(wheels: DataWheels, tmp_path: Path) -> None:
    # GIVEN a package whose test module loads a file abiprobe cannot follow (numpy's test_public_api.py)
    init = b"import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'libwt.so'))\n"
    tests = b"import ctypes\n\nimport withtests as wt\n\n\ndef test_hidden():\n"
    tests += b"    ctypes.CDLL(wt._core.__file__)\n"
    lib = build_shared(tmp_path / "wt", "libwt.so", "int wt(void) { return 1; }\n")
    files = {
        "withtests/__init__.py": init,
        "withtests/libwt.so": lib,
        "withtests/tests/__init__.py": b"",
        "withtests/tests/test_api.py": tests,
    }
    wheel = build_wheel(tmp_path / "wheels", "withtests", "1.0.0", files, tag=TAG)
    a = analyze_set(
        [
            wheel_facts_from_path(wheels.torch, unread_sources=BUILT_IN_UNREAD),
            wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD),
        ],
        TARGET,
        PROFILE,
        stack=BUILT_IN_STACK,
    )
    # THEN only the package's own library is a unit, and the set is ok (no unknown from its tests)
    assert [(u.path, u.status) for u in _units(a, "withtests")] == [("withtests/libwt.so", "ok")]
    assert (a.import_status, a.status) == ("ok", "ok")
    # AND a real import passes
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    assert _run(wheels, "torch", "import withtests", tmp_path / "site")[0] == 0
