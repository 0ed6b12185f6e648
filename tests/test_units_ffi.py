"""A library found by the package's own search in another of its modules (``from .. import libinfo``,
then ``libinfo.find_lib_path()``, as decord and dgl find theirs): the search is run on the set's files,
and each fixture is compared with a real pip install into a venv and a real import (support.ffi_wheels).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.ffi_wheels import FfiWheels, build_ffi_wheels
from support.held import judged_set
from support.venvs import import_in_venv

from abiprobe.analyze.analysis import SetAnalysis
from abiprobe.analyze.first_error import matches_loader_line
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.model.target import Target

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> FfiWheels:
    return build_ffi_wheels(tmp_path_factory.mktemp("ffi"))


def _judged(wheel: Path) -> SetAnalysis:
    return judged_set([wheel], TARGET, PROFILE)


def _import(wheel: Path, venv: Path, package: str = "ffipkg") -> tuple[int, str]:
    return import_in_venv(venv, [wheel], package)


def test_the_library_another_module_finds_is_the_unit_and_loads(wheels: FfiWheels, tmp_path: Path) -> None:
    a = _judged(wheels.ffipkg)
    # THEN the file the search in libinfo finds (beside libinfo's own __file__) is what loads, and
    # nothing is left unknown
    assert [(u.path, u.status) for u in a.units] == [("ffipkg/libffipkg.so", "ok")]
    assert (a.import_status, a.status) == ("ok", "ok")
    assert _import(wheels.ffipkg, tmp_path / "v") == (0, "")


def test_when_the_search_finds_nothing_its_own_error_is_the_failure(
    wheels: FfiWheels, tmp_path: Path
) -> None:
    a = _judged(wheels.ffipkg_gone)
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.text == "RuntimeError: Cannot find the files."
    code, last = _import(wheels.ffipkg_gone, tmp_path / "v")
    assert code != 0 and last == a.first_error.text, last


def test_the_library_found_fails_as_the_loader_says(wheels: FfiWheels, tmp_path: Path) -> None:
    a = _judged(wheels.ffipkg_bad)
    assert a.import_status == "fail" and a.first_error is not None
    assert "libffigone.so.1" in a.first_error.text
    code, last = _import(wheels.ffipkg_bad, tmp_path / "v")
    assert code != 0 and matches_loader_line(a.first_error.text, last), (a.first_error.text, last)


def test_a_search_up_path_parents_finds_the_file_it_tests_for(wheels: FfiWheels, tmp_path: Path) -> None:
    a = _judged(wheels.parentspkg)
    assert [(u.path, u.status) for u in a.units] == [("parentspkg/lib/lib_parents.so", "ok")]
    assert (a.import_status, a.status) == ("ok", "ok")
    assert _import(wheels.parentspkg, tmp_path / "v", "parentspkg") == (0, "")


def test_a_search_that_ends_in_the_base_interpreters_prefix_loads_the_packages_own(
    wheels: FfiWheels, tmp_path: Path
) -> None:
    a = _judged(wheels.basepkg)
    assert [(u.path, u.status) for u in a.units] == [("basepkg/lib/libbasepkg.so", "ok")]
    assert (a.import_status, a.status) == ("ok", "ok")
    assert _import(wheels.basepkg, tmp_path / "v", "basepkg") == (0, "")


def test_without_its_library_the_base_prefix_search_raises_its_own_error(
    wheels: FfiWheels, tmp_path: Path
) -> None:
    # GIVEN no library in the wheel: neither the editable tree nor the base interpreter's prefix has it
    a = _judged(wheels.basepkg_gone)
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.text == "basepkg.BaseLibraryNotFound: Cannot find basepkg's library"
    code, last = _import(wheels.basepkg_gone, tmp_path / "v", "basepkg")
    assert code != 0 and last == a.first_error.text, last
