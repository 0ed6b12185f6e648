"""Libraries an installer puts in the environment's prefix (a wheel's ``.data/data/lib``), found by the
package going up from ``site.getsitepackages()`` or by a RUNPATH that leaves site-packages (issue 26):
each fixture judged statically and installed into a real venv by pip and imported (support.prefix_wheels).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.held import judged_set
from support.prefix_wheels import CORE, PrefixWheels, build_prefix_wheels
from support.venvs import make_venv, pip_install

from abiprobe.analyze.analysis import SetAnalysis, UnitAnalysis
from abiprobe.analyze.first_error import matches_loader_line
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.model.target import Target

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")
IN_PREFIX = f"../../{CORE}"  # <prefix>/lib/libprefixcore.so.1, relative to site-packages


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> PrefixWheels:
    return build_prefix_wheels(tmp_path_factory.mktemp("prefix"))


def _analyze(wheels: PrefixWheels, *names: str) -> SetAnalysis:
    return judged_set([wheels.torch, *(getattr(wheels, n) for n in names)], TARGET, PROFILE)


def _import(wheels: PrefixWheels, names: tuple[str, ...], package: str, venv: Path) -> tuple[int, str]:
    """pip installs the fixture torch and ``names`` into a fresh venv (``.data/data`` files into its
    prefix, as for any user); the venv's Python imports ``package``: exit status and last line, the
    venv's path cut."""
    python = make_venv(venv, with_pip=False)
    pip_install(python, "--no-index", wheels.torch, *(getattr(wheels, n) for n in names))
    assert (venv / "lib" / CORE).is_file() or "prefixcore" not in names
    run = subprocess.run([str(python), "-I", "-c", f"import {package}"], capture_output=True, text=True)
    lines = run.stderr.strip().splitlines()
    return run.returncode, (lines[-1].replace(f"{venv}/", "") if lines else "")


def _units(a: SetAnalysis, dist: str) -> list[UnitAnalysis]:
    return [u for u in a.units if u.dist.startswith(f"{dist} ")]


def test_a_library_found_two_folders_above_site_packages_is_the_prefixs_file(
    wheels: PrefixWheels, tmp_path: Path
) -> None:
    # GIVEN prefixlib, which looks for libprefixcore.so.1 by the system's search, then above each folder
    # of site.getsitepackages(); prefixcore installs it into <prefix>/lib
    a = _analyze(wheels, "prefixlib", "prefixcore")
    # THEN the library loaded is the one in the prefix, and the extension that needs it by soname loads
    # (after the system's search, a candidate tried first and moved on from: a warning)
    paths = {u.path: u.status for u in a.units}
    assert paths == {CORE: "warn", IN_PREFIX: "ok", "prefixlib/_ext.abi3.so": "ok"}, paths
    assert (a.import_status, a.status) == ("ok", "warn")
    # AND pip's install imports
    assert _import(wheels, ("prefixlib", "prefixcore"), "prefixlib", tmp_path / "v") == (0, "")


def test_when_no_folder_has_the_library_the_packages_own_error_is_the_failure(
    wheels: PrefixWheels, tmp_path: Path
) -> None:
    # GIVEN prefixlib without prefixcore (fairseq2n without libsndfile's wheel)
    a = _analyze(wheels, "prefixlib")
    # THEN importing fails with the package's own OSError, raised once the prefix's file is absent
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.raised == "OSError: prefixlib needs libprefixcore.so.1: install prefixcore"
    # AND the prefix's path is one of the candidates it tried, failing as the loader says there
    (raised,) = [u for u in a.units if u.kind == "raise"]
    (tried,) = [
        c["first_failure"] for c in raised.verdicts[0].evidence["candidates"] if c["unit"] == IN_PREFIX
    ]
    assert raised.status == "fail" and tried.startswith("OSError: <prefix>/lib/libprefixcore.so.1: "), tried
    # AND the real import fails with that line
    code, last = _import(wheels, ("prefixlib",), "prefixlib", tmp_path / "v")
    assert code != 0 and last == a.first_error.raised, last
    # AND opening the prefix's path in that venv fails with the message predicted for the candidate
    python = tmp_path / "v" / "bin" / "python"
    opened = (
        "import ctypes, site, pathlib; "
        "ctypes.CDLL(str(pathlib.Path(site.getsitepackages()[0]).parent.parent / 'libprefixcore.so.1'))"
    )
    run = subprocess.run([str(python), "-I", "-c", opened], capture_output=True, text=True)
    assert run.returncode != 0 and matches_loader_line(tried, run.stderr.strip().splitlines()[-1]), run.stderr


def test_a_second_search_after_one_that_found_its_library_in_the_prefix_is_followed(
    wheels: PrefixWheels, tmp_path: Path
) -> None:
    # GIVEN prefixtwo: the search finds libprefixcore.so.1 in the prefix (the system's search failed
    # first), then runs again for libprefixother.so.1, which nobody ships
    a = _analyze(wheels, "prefixtwo", "prefixcore")
    # THEN the second search is followed on the path the first took, and the package's raise is the failure
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.raised == "OSError: prefixtwo needs libprefixother.so.1"
    # AND its first line is the second search's first failure, not the first search's
    assert a.first_error.text.startswith("OSError: libprefixother.so.1: cannot open"), a.first_error.text
    # AND the real import fails with the package's line
    code, last = _import(wheels, ("prefixtwo", "prefixcore"), "prefixtwo", tmp_path / "v")
    assert code != 0 and last == a.first_error.raised, last


def test_a_prefix_library_that_fails_to_load_is_caught_and_the_package_raises(
    wheels: PrefixWheels, tmp_path: Path
) -> None:
    # GIVEN prefixcore_bad: the prefix's library needs a library nobody has
    a = _analyze(wheels, "prefixlib", "prefixcore_bad")
    # THEN the package's OSError is the failure, after the loader's failure on the prefix's file
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.raised == "OSError: prefixlib needs libprefixcore.so.1: install prefixcore"
    (raised,) = [u for u in a.units if u.kind == "raise"]
    assert f"{IN_PREFIX}: OSError: libcudart_gone.so.12: cannot open" in raised.verdicts[0].explanation
    # AND the real import fails with the package's line
    code, last = _import(wheels, ("prefixlib", "prefixcore_bad"), "prefixlib", tmp_path / "v")
    assert code != 0 and last == a.first_error.raised, last


def test_a_runpath_up_to_the_prefixs_lib_finds_its_library(wheels: PrefixWheels, tmp_path: Path) -> None:
    # GIVEN prefixrun, whose extension's RUNPATH $ORIGIN/../../.. is <prefix>/lib
    a = _analyze(wheels, "prefixrun", "prefixcore")
    (unit,) = _units(a, "prefixrun")
    assert (unit.path, unit.status) == ("prefixrun/_ext.abi3.so", "ok")
    assert a.import_status == "ok"
    assert _import(wheels, ("prefixrun", "prefixcore"), "prefixrun", tmp_path / "v") == (0, "")


def test_without_the_prefixs_library_the_runpath_extension_fails_as_the_loader_says(
    wheels: PrefixWheels, tmp_path: Path
) -> None:
    a = _analyze(wheels, "prefixrun")
    assert a.import_status == "fail" and a.first_error is not None
    assert CORE in a.first_error.text
    code, last = _import(wheels, ("prefixrun",), "prefixrun", tmp_path / "v")
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_raise_after_a_loop_abiprobe_cannot_follow_is_no_failure(
    wheels: PrefixWheels, tmp_path: Path
) -> None:
    # GIVEN pathloop: a helper tries each entry of sys.path and returns None when none loads; the caller
    # raises on None. The loop returns the library on some runs, so None is not known to be returned
    a = _analyze(wheels, "pathloop")
    # THEN the package's raise is not the verdict (the library it ships loads)
    assert a.import_status != "fail", [(u.path, u.status) for u in a.units]
    assert not [u for u in a.units if u.kind == "raise" and u.status == "fail"]
    # AND the real import succeeds
    assert _import(wheels, ("pathloop",), "pathloop", tmp_path / "v") == (0, "")
