"""A package's own loading functions, called at import, run on the set's files (issue 26): the search
transformer-engine makes (a system library by bare name, else the files of a folder of site-packages,
found by ``os.path.isdir`` and ``glob``, each loaded; its own ``raise`` when none is there). Each fixture is
judged statically and imported for real in a venv (``sysconfig``'s site-packages is the venv's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.pattern_wheels import gone_library
from support.probe_wheels import TAG
from support.venvs import import_in_venv
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import SetAnalysis, analyze_set
from abiprobe.analyze.first_error import matches_loader_line
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

TARGET = Target.parse(cuda="13.0", arch="sm120", python="cp312", platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")

SEARCH = b"""import ctypes
import glob
import os
import sysconfig


def _ext():
    return ".so"


def _from_site(name, strict=False):
    root = os.path.join(sysconfig.get_path("purelib"), "srch_libs")
    found = False
    if os.path.isdir(os.path.join(root, name)):
        paths = glob.glob(os.path.join(root, name, f"lib/lib*{_ext()}.*[0-9]"))
        found = len(paths) > 0
    handles = []
    if found:
        for path in paths:
            handles.append(ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))
    if strict and not found:
        raise RuntimeError(f"{name} shared object not found.")
    return found, handles


def _from_system(name):
    try:
        return True, ctypes.CDLL(f"lib{name}{_ext()}", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False, None


def _load(name):
    found, handle = _from_system(name)
    if found:
        return handle
    found, handle = _from_site(name)
    if found:
        return handle
    raise RuntimeError(f"{name} not found anywhere")


_ALPHA = _load("alpha")
if os.environ.get("SRCH_SKIP_BETA", "0") == "0":
    _BETA = _from_site("beta", strict=True)
"""


# the same search in a module of its own, called from the package's __init__ (``from ._loader import ...``)
LOADER = SEARCH.split(b"\n\n_ALPHA = ")[0].replace(b'"srch_libs"', b'"srchx_libs"') + b"\n"
SPLIT_INIT = b"""from ._loader import _from_site

_BETA = _from_site("beta", strict=True)
"""


def _plain(work: Path, filename: str) -> Path:
    name = filename.split(".")[0]
    return build_shared(work, filename, f"int {name}_fn(void) {{ return 1; }}\n", soname=filename)


@pytest.fixture(scope="module")
def search_wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("callprog")
    work = root / "build"
    alpha = _plain(work / "a", "libalpha.so.1")
    beta = _plain(work / "b", "libbeta.so.1")
    source = "int gone(void);\nint beta_fn(void) { return gone(); }\n"
    bad = build_shared(
        work / "bad", "libbeta.so.1", source, soname="libbeta.so.1", link=(gone_library(work),)
    )
    common = {"srch/__init__.py": SEARCH, "srch_libs/alpha/lib/libalpha.so.1": alpha}
    beta_at = "srch_libs/beta/lib/libbeta.so.1"
    return {
        "found": build_wheel(root / "found", "srch", "1.0", {**common, beta_at: beta}, tag=TAG),
        "missing": build_wheel(root / "missing", "srch", "1.0", common, tag=TAG),
        "broken": build_wheel(root / "broken", "srch", "1.0", {**common, beta_at: bad}, tag=TAG),
        "split": build_wheel(
            root / "split",
            "srchx",
            "1.0",
            {
                "srchx/__init__.py": SPLIT_INIT,
                "srchx/_loader.py": LOADER,
                "srchx_libs/alpha/lib/libalpha.so.1": alpha,
            },
            tag=TAG,
        ),
    }


def _analyze(wheel: Path) -> SetAnalysis:
    facts = wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)
    return analyze_set([facts], TARGET, PROFILE, stack=default_stack())


def _units(a: SetAnalysis) -> dict[str, tuple[str, str]]:
    return {u.path: (u.timing, u.status) for u in a.units if u.dist.startswith("srch ")}


def test_a_search_that_finds_each_library_in_site_packages_loads_them_at_import(
    search_wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN srch, whose _load("alpha") tries libalpha.so by bare name (nothing provides it), then finds
    # srch_libs/alpha/lib/libalpha.so.1 by isdir and glob, and whose _from_site("beta", strict=True) finds
    # libbeta.so.1 the same way
    a = _analyze(search_wheels["found"])
    # THEN both libraries are units loaded at import, at the line of the package's own CDLL, and it loads
    got = _units(a)
    assert got["srch_libs/alpha/lib/libalpha.so.1"] == ("import", "ok"), got
    assert got["srch_libs/beta/lib/libbeta.so.1"] == ("import", "ok"), got
    alpha = next(u for u in a.units if u.path == "srch_libs/alpha/lib/libalpha.so.1")
    assert alpha.where == "srch/__init__.py line 20" and "run on the set's files" in alpha.note
    assert a.import_status == "ok" and a.first_error is None
    # AND a real import in a venv passes
    assert import_in_venv(tmp_path / "venv", [search_wheels["found"]], "srch") == (0, "")


def test_a_search_that_finds_nothing_fails_with_the_packages_own_raise(
    search_wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN the same package without srch_libs/beta: its strict search raises
    a = _analyze(search_wheels["missing"])
    # THEN importing fails with the package's own RuntimeError, at its raise
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.text == "RuntimeError: beta shared object not found."
    assert a.first_error.unit == "raise:srch/__init__.py line 22"
    assert _units(a)["srch_libs/alpha/lib/libalpha.so.1"] == ("import", "ok")
    # AND a real import fails with that line
    code, last = import_in_venv(tmp_path / "venv", [search_wheels["missing"]], "srch")
    assert code != 0 and last == a.first_error.text, last


def test_a_library_the_search_finds_that_cannot_load_fails_at_import(
    search_wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN the search finds libbeta.so.1, which needs libcudart_gone.so.12 (no wheel ships it)
    a = _analyze(search_wheels["broken"])
    # THEN that library fails at import with the loader's line
    assert _units(a)["srch_libs/beta/lib/libbeta.so.1"] == ("import", "fail")
    assert a.import_status == "fail" and a.first_error is not None
    assert "libcudart_gone.so.12" in a.first_error.text
    # AND a real import fails with that line
    code, last = import_in_venv(tmp_path / "venv", [search_wheels["broken"]], "srch")
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_search_in_another_module_of_the_package_is_run_there(
    search_wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN srchx, whose __init__ calls _from_site("beta", strict=True) imported from its _loader module,
    # and which ships no srchx_libs/beta
    a = _analyze(search_wheels["split"])
    # THEN importing fails with that module's own RuntimeError, at its line in _loader.py
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.text == "RuntimeError: beta shared object not found."
    assert a.first_error.unit == "raise:srchx/_loader.py line 22"
    # AND a real import fails with that line
    code, last = import_in_venv(tmp_path / "venv", [search_wheels["split"]], "srchx")
    assert code != 0 and last == a.first_error.text, last
