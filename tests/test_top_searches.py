"""A package's search of its module's top level, run on the set's files (issue 26): a loop over the folders
it tries (the current folder, its own folder, a folder ``importlib.resources`` gives, ``<prefix>/lib``),
each library loaded inside a handler that goes on to the next, then a load by bare name, then the
package's own ``raise`` when nothing loaded (z3-solver's ``z3core.py`` does this). A library of the set
that fails inside the handler is followed both ways: what the package does when it loads, and when it
fails. And a test of whether torch's ``Tensor`` class has an attribute, read from the set's torch. Each
fixture is judged statically and imported for real in a venv."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cbuild import build_shared
from support.held import judged_set
from support.indexserver import IndexServer
from support.pattern_wheels import gone_library
from support.probe_wheels import TAG, build_extension
from support.venvs import import_in_venv
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import SetAnalysis
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.cli import main
from abiprobe.model.target import Target

TARGET = Target.parse(cuda="13.0", arch="sm120", python="cp312", platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")

CORE = b"""import atexit
import contextlib
import ctypes
import os
import sys

import importlib.resources as importlib_resources


class ZsError(Exception):
    pass


_stack = contextlib.ExitStack()
atexit.register(_stack.close)
_lib = None
_res = _stack.enter_context(importlib_resources.as_file(importlib_resources.files("zsrch").joinpath("lib")))
_dirs = [".", os.path.dirname(os.path.abspath(__file__)), _res, os.path.join(sys.prefix, "lib"), None]
if sys.version < "3":
    _dirs = []
else:
    import builtins
    if hasattr(builtins, "ZSRCH_DIRS"):
        _dirs = builtins.ZSRCH_DIRS
for v in ("ZSRCH_LIBRARY_PATH", "PATH"):
    if v in os.environ:
        _dirs.extend(os.environ[v].split(":"))
_failures = []
for d in _dirs:
    try:
        d = os.path.realpath(d)
        if os.path.isdir(d):
            d = os.path.join(d, "libzs.so")
            if os.path.isfile(d):
                _lib = ctypes.CDLL(d)
                break
    except Exception as e:
        _failures += [e]
if _lib is None:
    try:
        _lib = ctypes.CDLL("libzs.so")
    except Exception as e:
        _failures += [e]
if _lib is None:
    raise ZsError("libzs.so not found.")
"""
RAISED = "zsrch.core.ZsError: libzs.so not found."

TORCH_INIT = b"""from . import version
from .version import __version__ as __version__
from ._tensor import Tensor as Tensor
"""
TORCH_VERSION = b"__version__ = '{v}'\ncuda = '13.0'\nhip = None\n"
TENSOR_OLD = b"class Tensor:\n    def cpu(self):\n        return self\n"
TENSOR_NEW = (
    b"class Tensor:\n    __dlpack_c_exchange_api__: object = None\n\n    def cpu(self):\n"
    b"        return self\n"
)
DLX = b"""import ctypes
from pathlib import Path

import torch


def _load():
    if hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        return None
    major, minor = torch.__version__.split(".")[:2]
    lib_path = Path(__file__).parent / f"libdlx_torch{major}{minor}.so"
    if not lib_path.exists():
        raise ImportError("No matching prebuilt dlx extension")
    return ctypes.CDLL(str(lib_path))


_lib = _load()
"""


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("topsearch")
    work = root / "build"
    good = build_shared(work / "good", "libzs.so", "int zs_fn(void) { return 1; }\n", soname="libzs.so")
    bad = build_shared(work / "bad", "libzs.so", "int gone(void);\nint zs_fn(void) { return gone(); }\n",
                       soname="libzs.so", link=(gone_library(work),))  # fmt: skip
    code = {"zsrch/__init__.py": b"from .core import _lib\n", "zsrch/core.py": CORE}
    in_prefix = "zsrch-1.0.data/data/lib/libzs.so"  # <prefix>/lib/libzs.so once installed

    def torch(version: str, tensor: bytes) -> Path:
        ver = TORCH_VERSION.replace(b"{v}", version.encode())
        files = {"torch/__init__.py": TORCH_INIT, "torch/version.py": ver, "torch/_tensor.py": tensor}
        return build_wheel(root / f"torch{version}", "torch", version, files, tag=TAG)

    dlx = build_wheel(
        root / "dlx", "dlx", "1.0", {"dlx/__init__.py": DLX, "dlx/libdlx_torch29.so": bad}, tag=TAG
    )
    return {
        "found": build_wheel(root / "found", "zsrch", "1.0", {**code, "zsrch/lib/libzs.so": good}, tag=TAG),
        "missing": build_wheel(root / "missing", "zsrch", "1.0", code, tag=TAG),
        "fallback": build_wheel(
            root / "fallback", "zsrch", "1.0", {**code, "zsrch/lib/libzs.so": bad, in_prefix: good}, tag=TAG
        ),
        "broken": build_wheel(root / "broken", "zsrch", "1.0", {**code, "zsrch/lib/libzs.so": bad}, tag=TAG),
        "dlx": dlx,
        "torch-old": torch("2.9.0", TENSOR_OLD),
        "torch-new": torch("2.14.0", TENSOR_NEW),
    }


def _analyze(*paths: Path) -> SetAnalysis:
    return judged_set(paths, TARGET, PROFILE)


def _units(a: SetAnalysis, dist: str) -> dict[str, tuple[str, str]]:
    return {u.path: (u.timing, u.status) for u in a.units if u.dist.startswith(f"{dist} ")}


def test_a_top_level_search_that_finds_the_library_in_its_own_folder_loads_it(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN zsrch, whose core.py tries ".", its own folder, zsrch/lib (from importlib.resources) and
    # <prefix>/lib for libzs.so, and ships zsrch/lib/libzs.so
    a = _analyze(wheels["found"])
    # THEN that library is the unit its search loads at import, at the line of its CDLL, and it loads
    assert _units(a, "zsrch") == {"zsrch/lib/libzs.so": ("import", "ok")}, _units(a, "zsrch")
    unit = next(u for u in a.units if u.path == "zsrch/lib/libzs.so")
    assert unit.where == "zsrch/core.py line 35" and "run on the set's files" in unit.note
    assert a.import_status == "ok" and a.first_error is None
    # AND a real import in a venv passes
    assert import_in_venv(tmp_path / "venv", [wheels["found"]], "zsrch") == (0, "")


def test_a_top_level_search_that_finds_nothing_fails_with_the_packages_own_raise(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN the same package without any libzs.so: its loop finds none, the load by name fails
    a = _analyze(wheels["missing"])
    # THEN importing fails at the package's own raise, after the load by name fails in the loader
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.unit == "soname:libzs.so" and a.first_error.raised == RAISED, a.first_error
    assert (
        a.first_error.text == "OSError: libzs.so: cannot open shared object file: No such file or directory"
    )
    # AND a real import fails with that line
    code, last = import_in_venv(tmp_path / "venv", [wheels["missing"]], "zsrch")
    assert code != 0 and last == RAISED, last


def test_a_library_that_fails_inside_the_handler_is_followed_to_the_next_candidate(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN zsrch/lib/libzs.so needs libcudart_gone.so.12 (no wheel ships it), and the wheel also puts a
    # good libzs.so in <prefix>/lib, the folder the search tries after it
    a = _analyze(wheels["fallback"])
    # THEN the broken one is a candidate the package goes on from (a warning), the one in <prefix>/lib
    # loads after it, and importing works
    got = _units(a, "zsrch")
    assert got["zsrch/lib/libzs.so"] == ("optional", "warn"), got
    assert got["../../libzs.so"] == ("import", "ok"), got
    assert a.import_status in ("ok", "warn"), [v.explanation for v in a.failures()]
    # AND a real import in a venv passes
    assert import_in_venv(tmp_path / "venv", [wheels["fallback"]], "zsrch") == (0, "")


def test_a_library_that_fails_inside_the_handler_with_no_other_candidate_reaches_the_raise(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN only the broken zsrch/lib/libzs.so
    a = _analyze(wheels["broken"])
    # THEN importing fails: the loader's error on the library, then the package's own raise
    assert a.import_status == "fail" and a.first_error is not None
    assert "libcudart_gone.so.12" in a.first_error.text and a.first_error.raised == RAISED, a.first_error
    # AND a real import fails with the package's line
    code, last = import_in_venv(tmp_path / "venv", [wheels["broken"]], "zsrch")
    assert code != 0 and last == RAISED, last


def test_an_attribute_the_sets_torch_tensor_has_skips_the_load(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN dlx, which returns before loading its library when torch.Tensor has __dlpack_c_exchange_api__,
    # with a torch whose torch/_tensor.py defines it (and dlx ships no library for that torch)
    a = _analyze(wheels["torch-new"], wheels["dlx"])
    # THEN nothing of dlx loads, and its code, followed, is no "unknown"
    assert _units(a, "dlx") == {}, _units(a, "dlx")
    assert a.import_status in ("ok", "warn"), [v.explanation for v in a.failures()]
    # AND a real import passes
    assert import_in_venv(tmp_path / "venv", [wheels["torch-new"], wheels["dlx"]], "dlx") == (0, "")


def test_a_torch_tensor_without_the_attribute_goes_on_to_the_load(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN the same dlx with a torch 2.9.0 whose Tensor lacks the attribute: dlx loads libdlx_torch29.so,
    # which needs libcudart_gone.so.12
    a = _analyze(wheels["torch-old"], wheels["dlx"])
    # THEN that library is loaded at import and fails
    assert _units(a, "dlx") == {"dlx/libdlx_torch29.so": ("import", "fail")}, _units(a, "dlx")
    assert a.import_status == "fail"
    # AND a real import fails
    code, last = import_in_venv(tmp_path / "venv", [wheels["torch-old"], wheels["dlx"]], "dlx")
    assert code != 0 and "libcudart_gone.so.12" in last, last


@pytest.fixture(scope="module")
def dependent(
    wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, Path], str]]:
    """``zuser 1.0`` requiring the zsrch whose search finds its good library (served as zsrch 1.0) and
    ``zuser 2.0`` requiring the one with only the broken library (zsrch 2.0), on a local index."""
    root = tmp_path_factory.mktemp("dependent")
    built = {"zsrch-1.0": wheels["found"]}
    with zipfile.ZipFile(wheels["broken"]) as z:  # the broken variant, as version 2.0
        members = {n: z.read(n) for n in z.namelist() if not n.startswith("zsrch-1.0.dist-info/")}
    built["zsrch-2.0"] = build_wheel(root / "z2", "zsrch", "2.0", members, tag=TAG)
    for v in ("1.0", "2.0"):
        code = {"zuser/__init__.py": b"import zsrch\n"}
        built[f"zuser-{v}"] = build_wheel(
            root / f"u{v}", "zuser", v, code, tag=TAG, requires_dist=[f"zsrch=={v}"]
        )
    with IndexServer() as srv:
        for path in built.values():
            srv.add_wheel(path)
        yield built, srv.index_url


def _check(index: str, tmp: Path, capsys: pytest.CaptureFixture[str], item: str) -> dict[str, Any]:
    argv = ["check", item, "--cuda", "13.0", "--arch", "sm120", "--python", "3.12"]
    argv += ["--platform", "manylinux_2_28_x86_64", "--index-url", index]
    main([*argv, "--cache-dir", str(tmp / "cache"), "--json"])
    out = capsys.readouterr()
    assert out.out, out.err
    doc: dict[str, Any] = json.loads(out.out)
    return doc


def test_the_library_an_added_wheels_own_search_loads_is_read_and_judged(
    dependent: tuple[dict[str, Path], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built, index = dependent
    # GIVEN zuser 1.0, which imports zsrch 1.0 (added by the install closure), whose own search loads
    # zsrch/lib/libzs.so: a library nothing's DT_NEEDED names
    doc = _check(index, tmp_path, capsys, "zuser==1.0")
    # THEN that library is read and judged as the unit the search loads, and importing works
    units = {u["path"]: (u["timing"], u["status"]) for u in doc["units"] if u["dist"].startswith("zsrch ")}
    assert units == {"zsrch/lib/libzs.so": ("import", "ok")}, units
    assert doc["import_status"] in ("ok", "warn"), doc["checks"]
    # AND a real import of the two wheels passes
    wheels = [built["zuser-1.0"], built["zsrch-1.0"]]
    assert import_in_venv(tmp_path / "venv", wheels, "zuser") == (0, "")


def test_an_added_wheels_search_that_finds_only_a_broken_library_fails_the_import(
    dependent: tuple[dict[str, Path], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built, index = dependent
    # GIVEN zuser 2.0, whose zsrch 2.0 ships only the libzs.so that needs libcudart_gone.so.12
    doc = _check(index, tmp_path, capsys, "zuser==2.0")
    # THEN importing fails: the loader's error on it, then zsrch's own raise
    assert doc["import_status"] == "fail", doc["checks"]
    assert doc["first_error"]["raised"] == RAISED, doc["first_error"]
    # AND a real import fails with zsrch's line
    code, last = import_in_venv(tmp_path / "venv", [built["zuser-2.0"], built["zsrch-2.0"]], "zuser")
    assert code != 0 and last == RAISED, last


@pytest.fixture(scope="module")
def speedups(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``spd``, whose __init__ (no load call: its imports are read from its lines) imports its ``_ext``
    extension inside ``try`` / ``except ImportError`` and falls back to Python; ``_ext`` needs
    libcudart_gone.so.12. ``spdm`` catches only ``ModuleNotFoundError``, which a loader failure is not."""
    root = tmp_path_factory.mktemp("speedups")
    work = root / "build"
    out: dict[str, Path] = {}
    for name, clause in (("spd", "ImportError"), ("spdm", "ModuleNotFoundError")):
        body = "int gone(void);\nint use(void) { return gone(); }\n"
        ext = build_extension(work / name, "_ext.abi3.so", name, body=body, link=(gone_library(work),))
        init = f"try:\n    from . import _ext\nexcept {clause}:\n    _ext = None\n".encode()
        files = {f"{name}/__init__.py": init, f"{name}/_ext.abi3.so": ext}
        out[name] = build_wheel(root / name, name, "1.0", files, tag=TAG)
    return out


def test_an_extension_imported_inside_a_handler_that_catches_importerror_is_optional(
    speedups: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN spd, whose _ext fails in the loader inside ``try`` / ``except ImportError``
    a = _analyze(speedups["spd"])
    # THEN _ext fails as an optional unit, and importing works
    assert _units(a, "spd") == {"spd/_ext.abi3.so": ("optional", "fail")}, _units(a, "spd")
    assert a.import_status in ("ok", "warn"), [v.explanation for v in a.failures()]
    # AND a real import passes
    assert import_in_venv(tmp_path / "venv", [speedups["spd"]], "spd") == (0, "")


def test_an_extension_inside_a_handler_for_another_error_still_fails_the_import(
    speedups: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN spdm, whose handler catches ModuleNotFoundError only
    a = _analyze(speedups["spdm"])
    # THEN _ext's failure is importing's: a loader failure raises ImportError, not ModuleNotFoundError
    assert _units(a, "spdm") == {"spdm/_ext.abi3.so": ("import", "fail")}, _units(a, "spdm")
    assert a.import_status == "fail" and a.first_error is not None
    # AND a real import fails on that library
    code, last = import_in_venv(tmp_path / "venv", [speedups["spdm"]], "spdm")
    assert code != 0 and "libcudart_gone.so.12" in last, last
