"""Real wheels whose library is found by a search in another module of the package, as TVM's family
(decord, dgl) finds it: ``_ffi/base.py`` imports ``from .. import libinfo`` and calls
``libinfo.find_lib_path()``, which lists candidate folders from its own ``__file__`` (``ffipkg/``, not
``_ffi/``), keeps those that exist and raises its own error when none does.

- ``ffipkg``: ships ``ffipkg/libffipkg.so``, found by the search (libinfo's own folder).
- ``ffipkg_gone``: the same code without the library: ``find_lib_path`` raises ``RuntimeError``.
- ``ffipkg_bad``: ships the library, which needs a library nobody has: the loader's failure.
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


@dataclass(frozen=True)
class FfiWheels:
    ffipkg: Path
    ffipkg_gone: Path
    ffipkg_bad: Path


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
    return FfiWheels(good, gone, worse)
