"""What a package defines only on another system, and what the target's environment holds (issue 26).

tensorrt-cu13-bindings defines its library search (``find_lib``, which reads ``os.environ["PATH"]``)
only under ``if ... sys.platform.startswith("win"):``: on Linux the function does not exist, so it is no
first-use load. ``PATH`` is set in every
process (its folders hold none of the set's libraries), so reading it raises nothing. Each fixture is
judged statically and imported for real in a venv."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import judged_set
from support.probe_wheels import TAG
from support.venvs import import_in_venv
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import SetAnalysis
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.model.target import Target

TARGET = Target.parse(cuda="13.0", arch="sm120", python="cp312", platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")

WINONLY = b"""import ctypes
import os
import sys

_libs_imported = False
try:
    import winonly_libs
except ImportError:
    pass
else:
    _libs_imported = True

if not _libs_imported and sys.platform.startswith("win"):
    def find_lib(name):
        paths = os.environ["PATH"].split(os.path.pathsep)
        paths.append(os.path.join(os.path.dirname(__file__), os.pardir, "winonly.libs"))
        for path in paths:
            libpath = os.path.join(path, name)
            if os.path.isfile(libpath):
                return libpath
        raise FileNotFoundError(f"Could not find {name}")

    for lib in ["winonly_core.dll", "winonly_plugin.dll"]:
        ctypes.CDLL(find_lib(lib))

del _libs_imported
"""

ONPATH = b"""import ctypes
import os

_here = os.path.dirname(os.path.abspath(__file__))
_lib = None
for _d in os.environ["PATH"].split(os.pathsep):
    _cand = os.path.join(_d, "libonpath.so")
    if os.path.isfile(_cand):
        _lib = ctypes.CDLL(_cand)
        break
if _lib is None:
    _lib = ctypes.CDLL(os.path.join(_here, "libonpath.so"))
"""


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("defined")
    work = root / "build"
    onpath = build_shared(
        work / "onpath", "libonpath.so", "int op(void) { return 2; }\n", soname="libonpath.so"
    )
    return {
        "winonly": build_wheel(root / "w", "winonly", "1.0", {"winonly/__init__.py": WINONLY}, tag=TAG),
        "onpath": build_wheel(
            root / "op",
            "onpath",
            "1.0",
            {"onpath/__init__.py": ONPATH, "onpath/libonpath.so": onpath},
            tag=TAG,
        ),
    }


def _analyze(*paths: Path) -> SetAnalysis:
    return judged_set(paths, TARGET, PROFILE)


def _units(a: SetAnalysis, dist: str) -> dict[str, tuple[str, str]]:
    return {u.path: (u.timing, u.status) for u in a.units if u.dist.startswith(f"{dist} ")}


def test_a_function_defined_only_on_windows_is_no_load_of_the_linux_target(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN winonly, whose library search and its loop of loads sit under a test for Windows
    a = _analyze(wheels["winonly"])
    # THEN nothing of it is a unit (no first-use raise of its search), and the set passes
    assert _units(a, "winonly") == {}, _units(a, "winonly")
    assert a.status in ("ok", "warn") and a.features == (), [v.explanation for v in a.failures()]
    # AND a real import in a venv passes
    assert import_in_venv(tmp_path / "venv", [wheels["winonly"]], "winonly") == (0, "")


def test_a_search_of_path_finds_none_of_the_sets_libraries_and_raises_nothing(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN onpath, which reads os.environ["PATH"] at import, tries each folder for libonpath.so, then
    # loads its own
    a = _analyze(wheels["onpath"])
    # THEN PATH is there (no KeyError): its folders hold none of the set's libraries, the package's own
    # library is what loads, and importing works
    assert _units(a, "onpath") == {"onpath/libonpath.so": ("import", "ok")}, _units(a, "onpath")
    assert a.import_status in ("ok", "warn"), [v.explanation for v in a.failures()]
    assert import_in_venv(tmp_path / "venv", [wheels["onpath"]], "onpath") == (0, "")
