"""Real wheels for the ways packages pick the native code they load (abiprobe.analyze.units, issue 26).

- ``torch``: a fixture torch 2.9.0 (no local label) whose ``version.py`` says CUDA 13.0 and no ROCm, with
  ``ops.load_library`` opening a library with ctypes and ``xpu.is_available()`` False, as torch's do.
- ``cudaname``: computes ``libcudaname_cu130.so`` from ``torch.version.cuda``; the ``_cu128`` beside it
  needs a library nobody has.
- ``missingname``: computes ``libmissingname_cu130.so``, which it lacks (only ``_cu128``), catches the
  OSError and raises its own RuntimeError.
- ``trylist`` / ``trylist_none``: try ``libtl_v3``, ``libtl_v2``, ``libtl_v1`` until one loads, else raise
  ImportError; v3 needs an absent library (in ``trylist_none`` every candidate does).
- ``chain``: CUDA, else ROCm, else XPU, else CPU; the XPU library needs Intel's absent ``libsvml.so``.
- ``listglob``: loads ``liba.so`` then ``libb.so`` (which needs ``liba.so`` by soname, no RUNPATH) from a
  list in ``__init__``, then every ``ops/*.so`` of a glob; ``ops/libop1.so`` has an undefined symbol.
- ``netname``: the library's name is read from a JSON file of the wheel at import.
- ``optional``: loads ``libopt.so`` (which needs an absent library) inside a ``try`` whose handler goes on.
- ``sysnames`` / ``sysnames_none``: try ``libm.so.9``, then ``libm.so.6`` (the target's) by
  bare name, newest first, through the system's search; in ``sysnames_none`` only absent names.
- ``wrapped``: a helper re-raises its library's OSError as the package's own exception, which the
  package's ``__init__`` catches and warns about (xFormers' way).
- ``subsets``: loads the list its ``__init__`` picks by ``platform.machine()``: ``libx86.so`` (an undefined
  symbol) on x86_64, ``libarm.so`` (needs an absent library) elsewhere.
- ``guarded``: loads a path a helper reads from a file, under a test abiprobe cannot know: nothing is judged.
- ``opened``: ships ``opened_hook.abi3.so`` (needs an absent library) and ``opened_hook_cu13.abi3.so``,
  named like extension modules but exporting no ``PyInit_``: its Python only returns their paths, for a
  caller to hand to ``LD_PRELOAD`` or an allocator (torch-memory-saver's way); importing loads neither.
- ``helper`` / ``helper_none``: a helper returns the first of ``libhl_v2``, ``libhl_v1`` that loads, or
  None; the caller raises its own ImportError on None. v2 needs an absent library (v1 too in
  ``helper_none``).
- ``mutated``: a function builds its candidates with ``+=`` in a loop, keeps those that exist and loads the
  first, ``mutated/lib/libmut.so`` (which needs an absent library).
- ``opensfirst``: opens ``libcore.so`` through a search abiprobe cannot follow (a size test), then imports
  its extension ``_ext``, which needs ``libcore.so`` by soname only (no RUNPATH): found, being loaded already.
"""

from __future__ import annotations

import sysconfig
from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.probe_wheels import TAG
from support.stacks import _module
from support.wheelbuild import build_wheel

TORCH_INIT = b"""import ctypes

from . import version
from .version import __version__ as __version__


class _Ops:
    def load_library(self, path):
        ctypes.CDLL(path)


class _Xpu:
    @staticmethod
    def is_available():
        return False


ops = _Ops()
xpu = _Xpu()
"""
TORCH_VERSION = b"""from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']
__version__ = '2.9.0'
debug = False
cuda: Optional[str] = '13.0'
git_version = '0123456789abcdef'
hip: Optional[str] = None
"""
CUDANAME = b"""import os

import torch

_HERE = os.path.dirname(__file__)
_CUDA = torch.version.cuda.replace(".", "")
torch.ops.load_library(os.path.join(_HERE, f"libcudaname_cu{_CUDA}.so"))
"""
MISSINGNAME = b"""import os

import torch

_HERE = os.path.dirname(__file__)
try:
    _FILE = "libmissingname_cu%s.so" % torch.version.cuda.replace(".", "")
    torch.ops.load_library(os.path.join(_HERE, _FILE))
except OSError as e:
    raise RuntimeError(f"missingname has no build for CUDA {torch.version.cuda}") from e
"""
TRYLIST = b"""import ctypes
import os

_HERE = os.path.dirname(__file__)
for _name in ("libtl_v3.so", "libtl_v2.so", "libtl_v1.so"):
    try:
        _lib = ctypes.CDLL(os.path.join(_HERE, _name))
        break
    except OSError:
        continue
else:
    raise ImportError("trylist: none of libtl_v3, libtl_v2, libtl_v1 could be loaded")
"""
CHAIN = b"""import os

import torch

_HERE = os.path.dirname(__file__)
if torch.version.cuda:
    torch.ops.load_library(os.path.join(_HERE, "libchain_cuda.so"))
elif torch.version.hip:
    torch.ops.load_library(os.path.join(_HERE, "libchain_hip.so"))
elif hasattr(torch, "xpu") and torch.xpu.is_available():
    torch.ops.load_library(os.path.join(_HERE, "libchain_xpu.so"))
else:
    torch.ops.load_library(os.path.join(_HERE, "libchain_cpu.so"))
"""
LISTGLOB = b"""import glob
import os

import torch

_HERE = os.path.dirname(__file__)
_LIBS = ["liba.so", "libb.so"]
for _lib in _LIBS:
    torch.ops.load_library(os.path.join(_HERE, _lib))
for _path in sorted(glob.glob(os.path.join(_HERE, "ops", "*.so"))):
    torch.ops.load_library(_path)
"""
NETNAME = b"""import ctypes
import json
import os

_HERE = os.path.dirname(__file__)
with open(os.path.join(_HERE, "libs.json")) as f:
    _NAME = json.load(f)["lib"]
ctypes.CDLL(os.path.join(_HERE, _NAME))
"""
OPTIONAL = b"""import ctypes
import os

HAS_OPT = True
try:
    ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libopt.so"))
except OSError:
    HAS_OPT = False
"""
GUARDED = b"""import ctypes
import os

_HERE = os.path.dirname(__file__)


def _path():
    with open(os.path.join(_HERE, "which.txt")) as f:
        return os.path.join(_HERE, f.read().strip())


if os.path.isdir(_HERE):
    ctypes.CDLL(_path())
"""
SYSNAMES = b"""import ctypes

for _major in (9, %d):
    try:
        _lib = ctypes.CDLL(f"lib%s.so.{_major}")
        break
    except OSError:
        continue
else:
    raise OSError("sysnames: no usable system library")
"""
WRAPPED = b"""import ctypes
import os
import warnings

_HERE = os.path.dirname(__file__)


class WrappedLibError(Exception):
    pass


def _register():
    try:
        ctypes.CDLL(os.path.join(_HERE, "libwrapped.so"))
    except OSError as exc:
        raise WrappedLibError("wrapped: cannot load its library") from exc


try:
    _register()
except WrappedLibError as e:
    CAUSE = str(e.__cause__)
    warnings.warn(f"WARNING[WRAPPED]: {e}")
"""
SUBSETS = b"""import os
import platform

import torch

_HERE = os.path.dirname(__file__)
if platform.machine() == "x86_64":
    _LIBS = ["libx86.so"]
else:
    _LIBS = ["libarm.so"]
for _lib in _LIBS:
    torch.ops.load_library(os.path.join(_HERE, _lib))
"""
OPENED = b"""import os

_ROOT = os.path.dirname(os.path.dirname(__file__))


def hook_path(cuda_major):
    return os.path.join(_ROOT, f"opened_hook_cu{cuda_major}.abi3.so")
"""
HELPER = b"""import ctypes
import os

_HERE = os.path.dirname(__file__)


def _load_first():
    for name in ("libhl_v2.so", "libhl_v1.so"):
        try:
            return ctypes.CDLL(os.path.join(_HERE, name))
        except OSError:
            pass
    return None


_lib = _load_first()
if _lib is None:
    raise ImportError("helper: no usable libhl library")
"""
MUTATED = b"""import ctypes
import os

_HERE = os.path.dirname(__file__)


def _find():
    found = []
    for d in (_HERE, os.path.join(_HERE, "lib")):
        found += [os.path.join(d, "libmut.so")]
    found = [p for p in found if os.path.isfile(p)]
    return found


_LIB = ctypes.CDLL(_find()[0])
"""
OPENSFIRST = b"""import ctypes
import glob
import os

_HERE = os.path.dirname(__file__)


def _core_path():
    found = [p for p in glob.glob(os.path.join(_HERE, "libcore*.so")) if os.path.getsize(p) > 0]
    return found[0]


_CORE = ctypes.CDLL(_core_path())
from . import _ext  # noqa: E402
"""


# a backend loaded only when an environment variable asks for it, by a path abiprobe cannot follow,
# defined before the extension that needs libcore.so (in the set, opened by nothing): an unfollowed load
# that never runs before the import fails
OPTFIRST = b"""import ctypes
import os


def _backend():
    try:
        import optfirst_plugin_absent as plugin

        ctypes.CDLL(plugin.library_path())
    except Exception:
        pass


if os.environ.get("OPTFIRST_BACKEND", "0") != "0":
    _backend()

from . import _ext  # noqa: E402
"""


@dataclass(frozen=True)
class PatternWheels:
    torch: Path
    cudaname: Path
    missingname: Path
    trylist: Path
    trylist_none: Path
    chain: Path
    listglob: Path
    netname: Path
    optional: Path
    guarded: Path
    sysnames: Path
    sysnames_none: Path
    wrapped: Path
    subsets: Path
    opened: Path
    mutated: Path
    opensfirst: Path
    helper: Path
    helper_none: Path
    optfirst: Path


def _plain(out: Path, filename: str, soname: str | None = None) -> Path:
    return build_shared(
        out, filename, f"int {filename.split('.')[0]}_fn(void) {{ return 1; }}\n", soname=soname
    )


def _needing(out: Path, filename: str, absent: Path) -> Path:
    return build_shared(
        out, filename, "extern int gone(void); int k(void) { return gone(); }\n", link=[absent]
    )


def gone_library(work: Path) -> Path:
    """``libcudart_gone.so.12``, a library built only to be linked against: no wheel ships it, so what
    needs it fails in the loader."""
    return build_shared(work / "absent", "libcudart_gone.so.12", "int gone(void) { return 0; }\n",
                        soname="libcudart_gone.so.12")  # fmt: skip


def build_pattern_wheels(root: Path) -> PatternWheels:
    work, out = root / "build", root / "wheels"
    torch_lib = _plain(work / "torch", "libc10.so", "libc10.so")
    torch_files = {
        "torch/__init__.py": TORCH_INIT,
        "torch/version.py": TORCH_VERSION,
        "torch/lib/libc10.so": torch_lib,
    }
    torch = build_wheel(out, "torch", "2.9.0", torch_files, tag=TAG)
    absent = gone_library(work)
    svml = build_shared(work / "svml", "libsvml.so", "int gone(void) { return 0; }\n", soname="libsvml.so")

    cudaname = build_wheel(out, "cudaname", "1.0", {
        "cudaname/__init__.py": CUDANAME,
        "cudaname/libcudaname_cu130.so": _plain(work / "cn", "libcudaname_cu130.so"),
        "cudaname/libcudaname_cu128.so": _needing(work / "cn", "libcudaname_cu128.so", absent),
    }, tag=TAG)  # fmt: skip
    missingname = build_wheel(out, "missingname", "1.0", {
        "missingname/__init__.py": MISSINGNAME,
        "missingname/libmissingname_cu128.so": _plain(work / "mn", "libmissingname_cu128.so"),
    }, tag=TAG)  # fmt: skip
    v3 = _needing(work / "tl", "libtl_v3.so", absent)
    trylist = build_wheel(out / "t", "trylist", "1.0", {
        "trylist/__init__.py": TRYLIST, "trylist/libtl_v3.so": v3,
        "trylist/libtl_v2.so": _plain(work / "tl", "libtl_v2.so"),
        "trylist/libtl_v1.so": _plain(work / "tl", "libtl_v1.so"),
    }, tag=TAG)  # fmt: skip
    trylist_none = build_wheel(out / "tn", "trylist", "1.0", {
        "trylist/__init__.py": TRYLIST, "trylist/libtl_v3.so": v3,
        "trylist/libtl_v2.so": _needing(work / "tn", "libtl_v2.so", absent),
        "trylist/libtl_v1.so": _needing(work / "tn", "libtl_v1.so", absent),
    }, tag=TAG)  # fmt: skip
    chain = build_wheel(out, "chain", "1.0", {
        "chain/__init__.py": CHAIN,
        "chain/libchain_cuda.so": _plain(work / "ch", "libchain_cuda.so"),
        "chain/libchain_hip.so": _needing(work / "ch", "libchain_hip.so", absent),
        "chain/libchain_xpu.so": _needing(work / "ch", "libchain_xpu.so", svml),
        "chain/libchain_cpu.so": _plain(work / "ch", "libchain_cpu.so"),
    }, tag=TAG)  # fmt: skip
    liba = _plain(work / "lg", "liba.so", "liba.so")
    uses_a = "extern int liba_fn(void); int b(void) { return liba_fn(); }\n"
    libb = build_shared(work / "lg", "libb.so", uses_a,
                        link=[liba])  # fmt: skip
    op1 = build_shared(
        work / "lg", "libop1.so", "extern int op1_missing(void); int o(void) { return op1_missing(); }\n"
    )
    listglob = build_wheel(out, "listglob", "1.0", {
        "listglob/__init__.py": LISTGLOB, "listglob/liba.so": liba, "listglob/libb.so": libb,
        "listglob/ops/libop0.so": _plain(work / "lg", "libop0.so"), "listglob/ops/libop1.so": op1,
    }, tag=TAG)  # fmt: skip
    netname = build_wheel(out, "netname", "1.0", {
        "netname/__init__.py": NETNAME, "netname/libs.json": b'{"lib": "libnet.so"}\n',
        "netname/libnet.so": _needing(work / "nn", "libnet.so", absent),
    }, tag=TAG)  # fmt: skip
    optional = build_wheel(out, "optional", "1.0", {
        "optional/__init__.py": OPTIONAL, "optional/libopt.so": _needing(work / "op", "libopt.so", absent),
    }, tag=TAG)  # fmt: skip
    guarded = build_wheel(out, "guarded", "1.0", {
        "guarded/__init__.py": GUARDED, "guarded/which.txt": b"libguarded.so\n",
        "guarded/libguarded.so": _needing(work / "gu", "libguarded.so", absent),
    }, tag=TAG)  # fmt: skip
    plain = _plain(work / "sy", "libsysnames_keep.so")  # native code of its own, judged as no unit
    sysnames = build_wheel(out / "s", "sysnames", "1.0", {
        "sysnames/__init__.py": SYSNAMES % (6, b"m"), "sysnames/libkeep.so": plain,
    }, tag=TAG)  # fmt: skip
    sysnames_none = build_wheel(out / "sn", "sysnames", "1.0", {
        "sysnames/__init__.py": SYSNAMES % (8, b"abiprobe_absent"), "sysnames/libkeep.so": plain,
    }, tag=TAG)  # fmt: skip
    wrapped = build_wheel(out, "wrapped", "1.0", {
        "wrapped/__init__.py": WRAPPED,
        "wrapped/libwrapped.so": _needing(work / "wr", "libwrapped.so", absent),
    }, tag=TAG)  # fmt: skip
    x86 = build_shared(
        work / "su", "libx86.so", "extern int x86_missing(void); int x(void) { return x86_missing(); }\n"
    )
    subsets = build_wheel(out, "subsets", "1.0", {
        "subsets/__init__.py": SUBSETS, "subsets/libx86.so": x86,
        "subsets/libarm.so": _needing(work / "su", "libarm.so", absent),
    }, tag=TAG)  # fmt: skip
    opened = build_wheel(out, "opened", "1.0", {
        "opened/__init__.py": OPENED,
        "opened_hook.abi3.so": _needing(work / "oh", "opened_hook.abi3.so", absent),
        "opened_hook_cu13.abi3.so": _plain(work / "oh", "opened_hook_cu13.abi3.so"),
    }, tag=TAG)  # fmt: skip
    mutated = build_wheel(out, "mutated", "1.0", {
        "mutated/__init__.py": MUTATED, "mutated/lib/libmut.so": _needing(work / "mu", "libmut.so", absent),
    }, tag=TAG)  # fmt: skip
    core = _plain(work / "of", "libcore.so", "libcore.so")
    ext = _module(work / "of", f"_ext{sysconfig.get_config_var('EXT_SUFFIX')}", "_ext", link=(core,))
    opensfirst = build_wheel(out, "opensfirst", "1.0", {
        "opensfirst/__init__.py": OPENSFIRST, "opensfirst/libcore.so": core, f"opensfirst/{ext.name}": ext,
    }, tag=TAG)  # fmt: skip
    optfirst = build_wheel(out, "optfirst", "1.0", {
        "optfirst/__init__.py": OPTFIRST, "optfirst/libcore.so": core, f"optfirst/{ext.name}": ext,
    }, tag=TAG)  # fmt: skip
    v2 = _needing(work / "hl", "libhl_v2.so", absent)
    helper = build_wheel(out / "h", "helper", "1.0", {
        "helper/__init__.py": HELPER, "helper/libhl_v2.so": v2,
        "helper/libhl_v1.so": _plain(work / "hl", "libhl_v1.so"),
    }, tag=TAG)  # fmt: skip
    helper_none = build_wheel(out / "hn", "helper", "1.0", {
        "helper/__init__.py": HELPER, "helper/libhl_v2.so": v2,
        "helper/libhl_v1.so": _needing(work / "hn", "libhl_v1.so", absent),
    }, tag=TAG)  # fmt: skip
    return PatternWheels(
        torch, cudaname, missingname, trylist, trylist_none, chain, listglob, netname, optional, guarded,
        sysnames, sysnames_none, wrapped, subsets, opened, mutated, opensfirst, helper, helper_none,
        optfirst,
    )  # fmt: skip
