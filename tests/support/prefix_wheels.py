"""Real wheels whose libraries an installer puts in the environment's prefix, not in site-packages.

A wheel's ``<dist>.data/data/lib/`` files land in ``<prefix>/lib`` (oneTBB's and libsndfile's wheels ship
their libraries so); packages find them by going up from site-packages, or by a RUNPATH that does.

- ``prefixcore``: installs ``<prefix>/lib/libprefixcore.so.1`` (soname ``libprefixcore.so.1``) from its
  ``.data/data/lib``; ``prefixcore_bad`` the same file needing a library nobody has.
- ``prefixlib``: ``_open(name)`` tries ``CDLL(name)`` (the system's search) unless an environment
  variable says not to, then each folder of ``site.getsitepackages()`` (after the user's site-packages
  when ``site.ENABLE_USER_SITE``) two folders up, ``Path(folder).parent.parent / name``; it returns None
  when nothing loads, and ``__init__`` raises its own OSError on None, else imports ``_ext``, an
  extension that needs ``libprefixcore.so.1`` by soname (no RUNPATH: the library loaded globally
  before is what satisfies it).
- ``prefixtwo``: prefixlib's search run twice, for ``libprefixcore.so.1`` (found in the prefix) and then
  ``libprefixother.so.1`` (nobody ships it): the package raises its own OSError after the second.
- ``prefixrun``: imports ``_ext``, whose RUNPATH ``$ORIGIN/../../..`` is ``<prefix>/lib``, where it finds
  ``libprefixcore.so.1``.
- ``pathloop``: ``_find(name)`` tries ``CDLL(name)``, then each entry of ``sys.path`` (which abiprobe
  cannot list) for ``pathloop/lib/<name>``, returning what loads, else None; ``__init__`` raises its own
  OSError on None. The library is in the wheel and loads: whether the loop finds it is not something
  abiprobe can follow, so its raise is no failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.pattern_wheels import gone_library
from support.probe_wheels import TAG, build_extension
from support.return_wheels import cuda_torch
from support.wheelbuild import build_wheel

CORE = "libprefixcore.so.1"
PREFIXLIB_INIT = b"""import ctypes
import site
from os import environ
from pathlib import Path


def _open(name):
    if "PREFIXLIB_NO_SYSTEM" not in environ:
        try:
            return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass

    if site.ENABLE_USER_SITE:
        folders = [site.getusersitepackages()]
    else:
        folders = []
    folders += site.getsitepackages()

    for folder in folders:
        candidate = Path(folder).parent.parent.joinpath(name)
        try:
            return ctypes.CDLL(str(candidate), mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass
    return None


def _load_core():
    lib = _open("libprefixcore.so.1")
    if lib is None:
        raise OSError("prefixlib needs libprefixcore.so.1: install prefixcore")
    return lib


_core = _load_core()

from . import _ext
"""
# the same search run twice, as fairseq2n runs it for oneTBB then libsndfile: the first library is found
# in the prefix, the second (nobody ships it) is not, so the package raises after the second search
PREFIXTWO_INIT = PREFIXLIB_INIT.replace(b"prefixlib", b"prefixtwo").replace(
    b"_core = _load_core()\n",
    b"""_core = _load_core()


def _load_other():
    lib = _open("libprefixother.so.1")
    if lib is None:
        raise OSError("prefixtwo needs libprefixother.so.1")
    return lib


_other = _load_other()
""",
)
PREFIXRUN_INIT = b"from . import _ext\n"
PATHLOOP_INIT = b"""import ctypes
import os
import sys


def _find(name):
    try:
        return ctypes.CDLL(name)
    except OSError:
        pass
    for entry in sys.path:
        try:
            return ctypes.CDLL(os.path.join(entry, "pathloop", "lib", name))
        except OSError:
            pass
    return None


_lib = _find("libpathloop.so")
if _lib is None:
    raise OSError("pathloop: libpathloop.so not found on sys.path")
"""


@dataclass(frozen=True)
class PrefixWheels:
    torch: Path
    prefixcore: Path
    prefixcore_bad: Path
    prefixlib: Path
    prefixrun: Path
    pathloop: Path
    prefixtwo: Path


def build_prefix_wheels(root: Path) -> PrefixWheels:
    work, out = root / "build", root / "wheels"
    torch, absent = cuda_torch(work, out), gone_library(work)
    core = build_shared(work / "core", CORE, "int prefixcore_fn(void) { return 7; }\n", soname=CORE)
    needs_gone = "extern int gone(void); int prefixcore_fn(void) { return gone(); }\n"
    bad = build_shared(work / "bad", CORE, needs_gone, soname=CORE, link=[absent])
    data = f"prefixcore-1.0.data/data/lib/{CORE}"
    prefixcore = build_wheel(out / "good", "prefixcore", "1.0", {"prefixcore/__init__.py": b"", data: core},
                             tag=TAG)  # fmt: skip
    prefixcore_bad = build_wheel(out / "bad", "prefixcore", "1.0",
                                 {"prefixcore/__init__.py": b"", data: bad}, tag=TAG)  # fmt: skip
    uses = "extern int prefixcore_fn(void); int prefix_use(void) { return prefixcore_fn(); }\n"
    ext = build_extension(work / "lib", "_ext.abi3.so", "prefixlib", body=uses, link=[core])
    prefixlib = build_wheel(out, "prefixlib", "1.0", {"prefixlib/__init__.py": PREFIXLIB_INIT,
                                                      "prefixlib/_ext.abi3.so": ext}, tag=TAG)  # fmt: skip
    two_ext = build_extension(work / "two", "_ext.abi3.so", "prefixtwo", body=uses, link=[core])
    two_files = {"prefixtwo/__init__.py": PREFIXTWO_INIT, "prefixtwo/_ext.abi3.so": two_ext}
    prefixtwo = build_wheel(out, "prefixtwo", "1.0", two_files, tag=TAG)
    run_ext = build_extension(work / "run", "_ext.abi3.so", "prefixrun", body=uses, link=[core],
                              runpath=["$ORIGIN/../../.."])  # fmt: skip
    run_files = {"prefixrun/__init__.py": PREFIXRUN_INIT, "prefixrun/_ext.abi3.so": run_ext}
    prefixrun = build_wheel(out, "prefixrun", "1.0", run_files, tag=TAG)
    loop_lib = build_shared(work / "pl", "libpathloop.so", "int pl(void) { return 1; }\n")
    loop_files = {"pathloop/__init__.py": PATHLOOP_INIT, "pathloop/lib/libpathloop.so": loop_lib}
    pathloop = build_wheel(out, "pathloop", "1.0", loop_files, tag=TAG)
    return PrefixWheels(torch, prefixcore, prefixcore_bad, prefixlib, prefixrun, pathloop, prefixtwo)
