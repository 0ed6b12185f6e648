"""Load paths the package's own functions return, followed with the values the set and the target fix
(issue 26): each fixture judged statically and imported for real (support.return_wheels)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.held import judged_set
from support.return_wheels import SEARCH_LOCAL_INIT, ReturnWheels, build_return_wheels
from support.venvs import loader_line, run_unpacked

from abiprobe.analyze.analysis import SetAnalysis, UnitAnalysis
from abiprobe.analyze.first_error import matches_loader_line
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.model.target import Target

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> ReturnWheels:
    return build_return_wheels(tmp_path_factory.mktemp("returns"))


def _analyze(wheels: ReturnWheels, *names: str) -> SetAnalysis:
    return judged_set([wheels.torch, *(getattr(wheels, n) for n in names)], TARGET, PROFILE)


def _import(wheels: ReturnWheels, name: str | tuple[str, ...], package: str, site: Path) -> tuple[int, str]:
    """Install the fixture torch and the package (``name``: its fixture, or several) into one directory
    and import the package for real: the exit status and the last line Python printed, paths cut to
    their site-packages form."""
    names = (name,) if isinstance(name, str) else name
    run = run_unpacked(site, (wheels.torch, *(getattr(wheels, n) for n in names)), f"import {package}")
    lines = run.stderr.strip().splitlines()
    return run.returncode, (lines[-1].replace(f"{site}/", "") if lines else "")


def _units(a: SetAnalysis, dist: str) -> list[UnitAnalysis]:
    return [u for u in a.units if u.dist.startswith(f"{dist} ")]


def test_a_path_a_function_returns_from_torch_version_is_the_file_the_target_loads(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN retpath, whose _paths.cuda_library() returns HERE / f"libretpath_cuda{cuda}{SUFFIX}" (a Path
    # from torch.version.cuda, an environment override, a suffix keyed by platform.system()) and whose
    # __init__ falls back to cpu_library() when that file does not exist; torch's version.py: 13.0
    a = _analyze(wheels, "retpath")
    # THEN the one unit is the _cuda130 library, said to be computed from torch's version
    (unit,) = _units(a, "retpath")
    assert (unit.path, unit.timing, unit.status) == ("retpath/libretpath_cuda130.so", "import", "ok")
    assert "torch.version.cuda='13.0'" in unit.note
    assert (a.import_status, a.status) == ("ok", "ok")
    # AND a real import loads it
    assert _import(wheels, "retpath", "retpath", tmp_path) == (0, "")


def test_when_the_returned_file_is_absent_the_packages_fallback_is_what_loads(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN retpath_cpu: the same code, no _cuda130; its CPU library needs a library nobody has
    a = _analyze(wheels, "retpath_cpu")
    # THEN the CPU library is what loads (path.exists() is False), and it fails on the absent library;
    # the _cuda130 file the package looked for first is named as absent, a warning beside it
    looked, unit = _units(a, "retpath")
    assert (unit.path, unit.timing, unit.status) == ("retpath/libretpath_cpu.so", "import", "fail")
    assert (looked.path, looked.status) == ("retpath/libretpath_cuda130.so", "warn")
    assert a.import_status == "fail" and a.first_error is not None
    assert "libcudart_gone.so.12" in a.first_error.text
    # AND a real import fails with that line
    code, last = _import(wheels, "retpath_cpu", "retpath", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_try_list_through_a_file_finder_where_none_loads_fails_with_the_packages_raise(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN finder, which tries libfinder_core3, 2, 1 through a FileFinder with the extension suffixes
    a = _analyze(wheels, "finder")
    # THEN importing fails with the package's own RuntimeError, each candidate's first failure listed
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.raised == "RuntimeError: finder: none of libfinder_core3, 2, 1 could be loaded"
    (raised,) = [u for u in a.units if u.kind == "raise"]
    (verdict,) = raised.verdicts
    assert [c["unit"] for c in verdict.evidence["candidates"]] == [
        "finder/libfinder_core3.so", "finder/libfinder_core2.so", "finder/libfinder_core1.so",
    ]  # fmt: skip
    assert all("libcudart_gone.so.12" in c["first_failure"] for c in verdict.evidence["candidates"])
    assert a.first_error.text == verdict.evidence["candidates"][0]["first_failure"]
    # AND a real import fails with the package's line; loading the first candidate, with the loader's
    code, last = _import(wheels, "finder", "finder", tmp_path)
    assert code != 0 and last == a.first_error.raised, last
    assert matches_loader_line(a.first_error.text, loader_line(tmp_path, "finder/libfinder_core3.so"))


def test_a_function_abiprobe_cannot_follow_is_unknown_with_file_line_and_expression(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN opaquefn, which loads the file a function of its own reads from JSON
    a = _analyze(wheels, "opaquefn")
    # THEN the unit is unknown, named by file, line and expression, and by what the function returns
    (unit,) = _units(a, "opaquefn")
    assert (unit.status, unit.timing, unit.where) == ("unknown", "import", "opaquefn/__init__.py line 11")
    text = unit.verdicts[0].explanation
    assert "ctypes.CDLL(os.path.join(os.path.dirname(__file__), _library_name()))" in text
    assert "_library_name returns json.load(f)['lib'] (opaquefn/__init__.py line 8)" in text
    assert (a.status, a.import_status) == ("unknown", "unknown")
    # AND a real import fails (the library it names needs an absent one): ok would have been wrong
    code, last = _import(wheels, "opaquefn", "opaquefn", tmp_path)
    assert code != 0 and "libcudart_gone.so.12" in last, last


def test_an_instance_a_function_returns_names_the_library_through_its_fields(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN specs (bitsandbytes' way): get_specs() returns a dataclass of the GPUs' capabilities and
    # torch.version.cuda, or None; the package loads library_for(specs) when specs and that file exist
    a = _analyze(wheels, "specs")
    # THEN the one unit is the _cuda130 library (the target has a GPU; torch's version.py says 13.0)
    (unit,) = _units(a, "specs")
    assert (unit.path, unit.timing, unit.status) == ("specs/libspecs_cuda130.so", "import", "ok")
    assert "torch.version.cuda='13.0'" in unit.note
    assert (a.import_status, a.status) == ("ok", "ok")
    # AND a real import loads it
    assert _import(wheels, "specs", "specs", tmp_path) == (0, "")


def test_a_call_into_a_module_whose_tree_was_dropped_is_still_followed(
    wheels: ReturnWheels, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN twomods, whose __init__ loads _one.first(), _two.second(), then _one.third(), read keeping
    # one parsed tree at a time (a wheel of thousands of modules keeps a bounded number): _one's tree is
    # dropped by the call into _two and parsed again for the third call
    monkeypatch.setattr("abiprobe.binary.pyreturns._TREES_KEPT", 1)
    a = _analyze(wheels, "twomods")
    # THEN all three computed names are followed: the third fails on the library nobody has
    assert [(u.path, u.status) for u in _units(a, "twomods")] == [
        ("twomods/libtwo_a130.so", "ok"),
        ("twomods/libtwo_b130.so", "ok"),
        ("twomods/libtwo_c130.so", "fail"),
    ]  # fmt: skip
    assert a.import_status == "fail" and a.first_error is not None
    assert "libcudart_gone.so.12" in a.first_error.text
    # AND a real import fails with that line
    code, last = _import(wheels, "twomods", "twomods", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_library_the_package_searches_folders_for_is_the_file_its_search_finds(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN searchlib, whose _library_file("core") lists three folders of its own site-packages for a
    # file named libsearchlib_core*.so, and searchlib_core, another distribution, which installs it
    names = ("search", "search_core")
    a = _analyze(wheels, *names)
    # THEN the unit is the file the package's own search finds, and it loads
    (unit,) = _units(a, "searchlib_core")
    assert (unit.path, unit.timing, unit.status) == (
        "searchlib/wheel_lib/libsearchlib_core.so",
        "import",
        "ok",
    )
    assert "the package's own search" in unit.note
    assert (a.import_status, a.status) == ("ok", "ok")
    # AND a real import loads it
    assert _import(wheels, names, "searchlib", tmp_path) == (0, "")


def test_the_file_the_search_finds_fails_to_load_as_the_loader_says(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN the same search, and a searchlib_core whose library needs one nobody has
    names = ("search", "search_core_bad")
    a = _analyze(wheels, *names)
    # THEN the found file fails on the absent library, the loader's first line named
    (unit,) = _units(a, "searchlib_core")
    assert (unit.path, unit.status) == ("searchlib/wheel_lib/libsearchlib_core.so", "fail")
    assert a.import_status == "fail" and a.first_error is not None
    assert "libcudart_gone.so.12" in a.first_error.text
    # AND a real import fails with that line
    code, last = _import(wheels, names, "searchlib", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_when_the_search_finds_no_file_the_packages_own_error_is_the_failure(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN searchlib without the distribution that installs its library
    names = ("search",)
    a = _analyze(wheels, *names)
    # THEN importing fails with the package's own FileNotFoundError, raised by its search
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.text == "FileNotFoundError: searchlib: no libsearchlib_core library found"
    # AND a real import fails with that line
    code, last = _import(wheels, names, "searchlib", tmp_path)
    assert code != 0 and last == a.first_error.text, last


def test_a_search_whose_result_the_function_keeps_in_its_own_names_is_run_too(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN the same search, its result put in the loading function's own names first (``found = [...]``,
    # ``name = str(found[0])``, ``CDLL(name)``), and the searchlib_core whose library needs an absent one
    assert b"CDLL(name" in SEARCH_LOCAL_INIT
    names = ("search_local", "search_core_bad")
    a = _analyze(wheels, *names)
    # THEN the function's statements before the load are run with the search: the found file fails
    (unit,) = _units(a, "searchlib_core")
    assert (unit.path, unit.status) == ("searchlib/wheel_lib/libsearchlib_core.so", "fail")
    assert a.import_status == "fail" and a.first_error is not None
    # AND a real import fails with that line
    code, last = _import(wheels, names, "searchlib", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_name_from_the_parsed_torch_version_picks_the_library_built_for_it(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN verpick, which loads f"libverpick_torch{v.major}{v.minor}-{cuda or cpu}.so" with
    # v = packaging's Version(torch.__version__) (torch 2.9.0, a CUDA build), and raises its own
    # ImportError when that file is not there
    a = _analyze(wheels, "verpick")
    # THEN the one unit is the torch29 CUDA library (the others need a library nobody has)
    (unit,) = _units(a, "verpick")
    assert (unit.path, unit.timing, unit.status) == ("verpick/libverpick_torch29-cuda.so", "import", "ok")
    assert "torch.__version__='2.9.0'" in unit.note
    assert (a.import_status, a.status) == ("ok", "ok")
    assert _import(wheels, "verpick", "verpick", tmp_path / "new") == (0, "")
    # AND a wheel built only for torch 2.8 fails with the package's own error, as the real import does
    old = _analyze(wheels, "verpick_old")
    assert old.import_status == "fail" and old.first_error is not None
    assert old.first_error.text == "ImportError: No matching prebuilt verpick library"
    code, last = _import(wheels, "verpick_old", "verpick", tmp_path / "old")
    assert code != 0 and last == old.first_error.text, last


def test_a_loop_over_the_targets_a_data_file_names_loads_each_ones_list(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN targets, whose __init__ reads target.<name>.json for each of "default" and "extra" (only
    # extra's is in the wheel), keeps those found, then for each loads the libraries of its list, the
    # "extra" list emptied by a run-time test (torch.version.hip) the CUDA torch does not pass
    a = _analyze(wheels, "targets")
    # THEN only extra's library loads, at import, and default's (which needs a library nobody has) not
    assert [(u.path, u.timing, u.status) for u in _units(a, "targets")] == [
        ("targets/libtargets_extra.so", "import", "ok")
    ]
    assert a.import_status == "ok"
    assert _import(wheels, "targets", "targets", tmp_path / "ok") == (0, "")
    # AND when that library cannot load, the import fails with the loader's line, as the real one does
    bad = _analyze(wheels, "targets_bad")
    assert bad.import_status == "fail" and bad.first_error is not None
    code, last = _import(wheels, "targets_bad", "targets", tmp_path / "bad")
    assert code != 0 and matches_loader_line(bad.first_error.text, last), (bad.first_error.text, last)


def test_names_imported_from_a_small_module_of_the_wheel_pick_the_list_and_the_raise(
    wheels: ReturnWheels, tmp_path: Path
) -> None:
    # GIVEN verlib, whose __init__ takes __target__ and __variant__ from its generated docs/version.py
    # (absolute import, in a try), loads the libraries of that target's list and re-raises a failed load
    # unless the variant is "docs"
    a = _analyze(wheels, "verlib")
    # THEN the "default" list is what loads, at import
    assert [(u.path, u.timing, u.status) for u in _units(a, "verlib")] == [
        ("verlib/libverlib_core.so", "import", "ok")
    ]
    assert a.import_status == "ok"
    assert _import(wheels, "verlib", "verlib", tmp_path / "ok") == (0, "")
    # AND a library of that list that cannot load fails the import (variant "cuda": re-raised)
    bad = _analyze(wheels, "verlib_bad")
    assert bad.import_status == "fail" and bad.first_error is not None
    code, last = _import(wheels, "verlib_bad", "verlib", tmp_path / "bad")
    assert code != 0 and matches_loader_line(bad.first_error.text, last), (bad.first_error.text, last)
