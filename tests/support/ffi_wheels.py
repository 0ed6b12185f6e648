"""Real wheels whose library is found by a search in another module of the package, as TVM's family
(decord, dgl) finds it: ``_ffi/base.py`` imports ``from .. import libinfo`` and calls
``libinfo.find_lib_path()``, which lists candidate folders from its own ``__file__`` (``ffipkg/``, not
``_ffi/``), keeps those that exist and raises its own error when none does.

- ``ffipkg``: ships ``ffipkg/libffipkg.so``, found by the search (libinfo's own folder).
- ``ffipkg_gone``: the same code without the library: ``find_lib_path`` raises ``RuntimeError``.
- ``ffipkg_bad``: ships the library, which needs a library nobody has: the loader's failure.
- ``parentspkg``: lightgbm's search, ``Path(__file__).absolute().parents[i] / name`` kept when
  ``is_file()``; its library in ``parentspkg/lib``.
- ``basepkg``: xgboost's search, the package's ``lib``, an editable tree's (``os.path.pardir``) and
  ``sys.base_prefix``'s, then a loop loading the first found; ``basepkg_gone`` without the library
  raises the package's own ``BaseLibraryNotFound``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.probe_wheels import TAG
from support.wheelbuild import build_wheel

LIBINFO = b"""import os
import sys


def find_lib_path(name=None, optional=False):
    here = os.path.dirname(os.path.abspath(os.path.expanduser(__file__)))
    source_dir = os.path.join(here, "..", "..")
    dll_path = []
    if os.environ.get("FFIPKG_LIBRARY_PATH", None):
        dll_path.append(os.environ["FFIPKG_LIBRARY_PATH"])
    dll_path.append(here)
    dll_path.append(os.path.join(source_dir, "build"))
    dll_path = [os.path.abspath(x) for x in dll_path]
    if sys.platform.startswith("win32"):
        lib_dll_path = [os.path.join(p, "ffipkg.dll") for p in dll_path]
    else:
        lib_dll_path = [os.path.join(p, "libffipkg.so") for p in dll_path]
    lib_found = [p for p in lib_dll_path if os.path.exists(p) and os.path.isfile(p)]
    if not lib_found:
        if not optional:
            raise RuntimeError("Cannot find the files.")
        return None
    return lib_found
"""
BASE = b"""import ctypes
import os

from .. import libinfo


def _load_lib():
    lib_path = libinfo.find_lib_path()
    lib = ctypes.CDLL(lib_path[0], ctypes.RTLD_GLOBAL)
    return lib, os.path.basename(lib_path[0])


_LIB, _LIB_NAME = _load_lib()
"""
INIT = b"from ._ffi import base\n"
# lightgbm's search: Path(__file__).absolute().parents, then is_file()
PARENTS = b"""import ctypes
from pathlib import Path


def _find_lib_path():
    curr_path = Path(__file__).absolute()
    dll_path = [curr_path.parents[1], curr_path.parents[0] / "bin", curr_path.parents[0] / "lib"]
    dll_path = [p / "lib_parents.so" for p in dll_path]
    lib_path = [str(p) for p in dll_path if p.is_file()]
    if not lib_path:
        raise Exception("Cannot find parentspkg library file")
    return lib_path


_LIB = ctypes.cdll.LoadLibrary(_find_lib_path()[0])
"""
# xgboost's search: the package's lib, an editable tree's (os.path.pardir), then the base interpreter's
# prefix; a loop over what it found that loads the first it can
BASEPREFIX = b"""import ctypes
import os
import sys


class BaseLibraryNotFound(Exception):
    pass


def find_lib_path():
    curr_path = os.path.dirname(os.path.abspath(os.path.expanduser(__file__)))
    dll_path = [
        os.path.join(curr_path, "lib"),
        os.path.join(curr_path, os.path.pardir, os.path.pardir, "lib"),
        os.path.join(sys.base_prefix, "lib"),
    ]
    dll_path = [os.path.join(p, "libbasepkg.so") for p in dll_path]
    lib_path = [p for p in dll_path if os.path.exists(p) and os.path.isfile(p)]
    if not lib_path:
        raise BaseLibraryNotFound("Cannot find basepkg's library")
    return lib_path


def _load_lib():
    lib_paths = find_lib_path()
    for lib_path in lib_paths:
        try:
            return ctypes.cdll.LoadLibrary(lib_path)
        except OSError:
            continue
    raise OSError("basepkg: no library loaded")


_LIB = _load_lib()
"""


@dataclass(frozen=True)
class FfiWheels:
    ffipkg: Path
    ffipkg_gone: Path
    ffipkg_bad: Path
    parentspkg: Path
    basepkg: Path
    basepkg_gone: Path


def build_ffi_wheels(root: Path) -> FfiWheels:
    work, out = root / "build", root / "wheels"
    code = {"ffipkg/__init__.py": INIT, "ffipkg/_ffi/__init__.py": b"", "ffipkg/libinfo.py": LIBINFO,
            "ffipkg/_ffi/base.py": BASE}  # fmt: skip
    lib = build_shared(work / "good", "libffipkg.so", "int ffipkg_fn(void) { return 3; }\n")
    absent = build_shared(work / "absent", "libffigone.so.1", "int gone(void) { return 0; }\n",
                          soname="libffigone.so.1")  # fmt: skip
    needs_gone = "extern int gone(void); int ffipkg_fn(void) { return gone(); }\n"
    bad = build_shared(work / "bad", "libffipkg.so", needs_gone, link=[absent])
    good = build_wheel(out / "good", "ffipkg", "1.0", {**code, "ffipkg/libffipkg.so": lib}, tag=TAG)
    gone = build_wheel(out / "gone", "ffipkg", "1.0", code, tag=TAG)
    worse = build_wheel(out / "bad", "ffipkg", "1.0", {**code, "ffipkg/libffipkg.so": bad}, tag=TAG)
    parents_lib = build_shared(work / "parents", "lib_parents.so", "int parents_fn(void) { return 1; }\n")
    parents_files = {"parentspkg/__init__.py": PARENTS, "parentspkg/lib/lib_parents.so": parents_lib}
    parents = build_wheel(out, "parentspkg", "1.0", parents_files, tag=TAG)
    base_lib = build_shared(work / "base", "libbasepkg.so", "int base_fn(void) { return 1; }\n")
    base_code = {"basepkg/__init__.py": BASEPREFIX}
    base = build_wheel(
        out / "good", "basepkg", "1.0", {**base_code, "basepkg/lib/libbasepkg.so": base_lib}, tag=TAG
    )
    base_gone = build_wheel(out / "gone", "basepkg", "1.0", base_code, tag=TAG)
    return FfiWheels(good, gone, worse, parents, base, base_gone)
