"""Real wheels whose load paths come back from the package's own functions (abiprobe.binary.pyreturns).

- ``retpath``: ``_paths.cuda_library()`` returns ``HERE / f"libretpath_cuda{version}{SUFFIX}"`` (a
  ``Path``; ``version`` from ``torch.version.cuda`` unless ``RETPATH_CUDA_VERSION`` overrides it, the suffix
  from a dict keyed by ``platform.system()``); ``__init__`` falls back to ``cpu_library()`` (a
  ``joinpath(...).with_suffix(".so")``) when the CUDA file does not exist, then ``CDLL(os.fspath(path))``.
  Ships ``_cuda130`` (loads) and ``_cuda128`` (needs a library nobody has).
- ``retpath_cpu``: the same code, no ``_cuda130``: the CPU library it falls back to needs an absent one.
- ``finder``: tries ``libfinder_core3``, ``2``, ``1`` through a ``FileFinder`` with the extension suffixes
  (torchcodec's ``_get_extension_path``) until one loads; every one needs an absent library, so the
  package raises its own RuntimeError.
- ``opaquefn``: loads the file a function reads from JSON: the function cannot be followed.
- ``specs``: bitsandbytes' way: ``get_specs()`` returns a dataclass built from the GPUs' capabilities and
  ``torch.version.cuda`` (None without CUDA, or when anything raises); ``__init__`` loads
  ``library_for(specs)`` (``libspecs_cuda{specs.version}.so``) when ``specs`` and the file exist, else
  ``libspecs_cpu.so`` (which needs a library nobody has).
- ``twomods``: ``__init__`` loads ``_one.first()``, ``_two.second()``, then ``_one.third()`` (each a name
  from ``torch.version.cuda``); the third needs a library nobody has. Read keeping one parsed tree at a
  time, ``_one``'s tree is dropped by the call into ``_two`` and parsed again for the third call.
- ``searchlib``: transformer-engine's way: ``_library_file("core")`` lists three folders under the
  package's own site-packages (``find_spec(...).origin``'s grandparent, ``Path.iterdir``) for a file
  whose name starts with ``libsearchlib_core`` and ends in the platform's suffix, then
  ``sysconfig.get_paths()["purelib"]``, and raises FileNotFoundError when none has it. The library is
  in another distribution: ``search_core`` installs ``searchlib/wheel_lib/libsearchlib_core.so`` (loads),
  ``search_core_bad`` the same file needing a library nobody has. The suffix function is defined after
  the functions that call it (as transformer-engine's ``_get_sys_extension``).

The torch here also has ``cuda`` (available, one GPU of capability 12.0), as the target's has.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.pattern_wheels import TORCH_INIT, TORCH_VERSION, gone_library
from support.probe_wheels import TAG
from support.wheelbuild import build_wheel

RETPATH_PATHS = b"""import os
import platform
from pathlib import Path

import torch

HERE = Path(__file__).parent
SUFFIX = {"Darwin": ".dylib", "Linux": ".so", "Windows": ".dll"}.get(platform.system(), ".so")


def cuda_library(folder=HERE):
    version = torch.version.cuda.replace(".", "")
    override = os.environ.get("RETPATH_CUDA_VERSION")
    if override:
        version = override
    return folder / f"libretpath_cuda{version}{SUFFIX}"


def cpu_library():
    return HERE.joinpath("libretpath_cpu").with_suffix(".so")
"""
RETPATH_INIT = b"""import ctypes
import os

from ._paths import cpu_library, cuda_library


def _load():
    path = cuda_library()
    if not path.exists():
        path = cpu_library()
    return ctypes.CDLL(os.fspath(path))


_lib = _load()
"""
FINDER_UTILS = b"""import importlib.machinery
from pathlib import Path


def _extension_path(name):
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    finder = importlib.machinery.FileFinder(
        str(Path(__file__).parent), (importlib.machinery.ExtensionFileLoader, suffixes)
    )
    spec = finder.find_spec(name)
    if spec is None:
        raise ImportError(f"no spec for {name}")
    return spec.origin
"""
FINDER_INIT = b"""import torch

from ._utils import _extension_path


def _load_core():
    errors = []
    for major in (3, 2, 1):
        name = f"libfinder_core{major}"
        try:
            torch.ops.load_library(_extension_path(name))
            return
        except Exception as e:
            errors.append((major, e))
    raise RuntimeError("finder: none of libfinder_core3, 2, 1 could be loaded")


_load_core()
"""
TARGETS_INIT = b"""import json
import os

import torch


def _info(target):
    try:
        with open(os.path.join(os.path.dirname(__file__), f"target.{target}.json")) as f:
            return json.load(f)
    except Exception:
        return {}


infos = {target: _info(target) for target in ["default", "extra"]}
infos = {k: v for (k, v) in infos.items() if v}
extra_libraries = ["libtargets_extra"]
if torch.cuda.is_available() and torch.version.hip:
    extra_libraries = []
to_load = {"default": ["libtargets_default"], "extra": extra_libraries}
for target, info in infos.items():
    for library in to_load.get(target, []):
        torch.ops.load_library(os.path.join(os.path.dirname(__file__), f"{library}.so"))
"""
VERLIB_INIT = b"""import os

import torch


def _load(filename, no_throw=False):
    try:
        torch.ops.load_library(os.path.join(os.path.dirname(__file__), filename))
    except Exception as error:
        if not no_throw:
            raise error


try:
    from verlib.docs.version import __target__, __variant__
except Exception:
    __target__ = "INTERNAL"
    __variant__ = "INTERNAL"

libraries = {"default": ["libverlib_core"], "genai": ["libverlib_genai"]}
for library in libraries.get(__target__, []):
    _load(f"{library}.so", __variant__ == "docs")
"""
VERLIB_VERSION = b'__target__: str = "default"\n__variant__: str = "cuda"\n'
VERPICK_INIT = b"""import ctypes
from pathlib import Path

import torch
from packaging.version import Version


def _load():
    version = Version(torch.__version__)
    suffix = "cuda" if torch.cuda.is_available() else "cpu"
    path = Path(__file__).parent / f"libverpick_torch{version.major}{version.minor}-{suffix}.so"
    if not path.exists() or not path.is_file():
        raise ImportError("No matching prebuilt verpick library")
    return ctypes.CDLL(str(path))


_lib = _load()
"""
TORCH_CUDA = b"""

class _Cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def device_count():
        return 1

    @staticmethod
    def device(index):
        return index

    @staticmethod
    def get_device_capability(device=None):
        return (12, 0)


cuda = _Cuda()
"""
SPECS_SPECS = b"""import dataclasses

import torch


@dataclasses.dataclass(frozen=True)
class Specs:
    capability: tuple
    version: str


def _capabilities():
    count = torch.cuda.device_count()
    return sorted(torch.cuda.get_device_capability(torch.cuda.device(i)) for i in range(count))


def _version_tuple():
    major, minor = map(int, torch.version.cuda.split("."))
    return major, minor


def get_specs():
    if not torch.cuda.is_available():
        return None
    try:
        caps = _capabilities()
        if not caps:
            return None
        major, minor = _version_tuple()
        return Specs(capability=caps[-1], version=f"{major}{minor}")
    except Exception:
        return None
"""
SPECS_INIT = b"""import ctypes
from pathlib import Path

from ._specs import get_specs

HERE = Path(__file__).parent


def library_for(specs):
    return HERE / f"libspecs_cuda{specs.version}.so"


def _load():
    path = HERE / "libspecs_cpu.so"
    specs = get_specs()
    if specs:
        candidate = library_for(specs)
        if candidate.exists():
            path = candidate
    return ctypes.CDLL(str(path))


lib = _load()
"""
OPAQUEFN = b"""import ctypes
import json
import os


def _library_name():
    with open(os.path.join(os.path.dirname(__file__), "which.json")) as f:
        return json.load(f)["lib"]


ctypes.CDLL(os.path.join(os.path.dirname(__file__), _library_name()))
"""
TWOMODS_INIT = b"""import ctypes

from . import _one, _two

_a = ctypes.CDLL(_one.first())
_b = ctypes.CDLL(_two.second())
_c = ctypes.CDLL(_one.third())
"""
TWOMODS_ONE = b"""import os

import torch

HERE = os.path.dirname(__file__)


def first():
    return os.path.join(HERE, f"libtwo_a{torch.version.cuda.replace('.', '')}.so")


def third():
    return os.path.join(HERE, f"libtwo_c{torch.version.cuda.replace('.', '')}.so")
"""
TWOMODS_TWO = b"""import os

import torch


def second():
    return os.path.join(os.path.dirname(__file__), f"libtwo_b{torch.version.cuda.replace('.', '')}.so")
"""
SEARCH_INIT = b"""import ctypes
import importlib.util
import platform
import sysconfig
from pathlib import Path


def _find_in(root, prefix):
    if not root.is_dir():
        return None
    found = []
    for folder in (root, root / "searchlib", root / "searchlib/wheel_lib"):
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.name.startswith(prefix) and path.suffix == _extension():
                found.append(path)
    if len(found) > 1:
        raise RuntimeError(f"several files: {found}")
    return found[0] if found else None


def _library_file(name):
    assert name in ("core", "extra"), name
    prefix = f"libsearchlib_{name}"
    here = Path(importlib.util.find_spec("searchlib").origin).parent.parent
    path = _find_in(here, prefix)
    if path is None:
        path = _find_in(Path(sysconfig.get_paths()["purelib"]), prefix)
    if path is None:
        raise FileNotFoundError(f"searchlib: no {prefix} library found")
    return path


def _extension():
    return {"Linux": ".so", "Darwin": ".dylib"}.get(platform.system(), ".dll")


def _load_core():
    return ctypes.CDLL(str(_library_file("core")), mode=ctypes.RTLD_GLOBAL)


_core = _load_core()
"""


# the same search, its result kept in the function's own names before the load (dgl's way:
# ``lib_path = find_lib_path()`` then ``CDLL(lib_path[0])``)
SEARCH_LOCAL_INIT = SEARCH_INIT.replace(
    b"""    return ctypes.CDLL(str(_library_file("core")), mode=ctypes.RTLD_GLOBAL)""",
    b"""    found = [_library_file("core")]
    name = str(found[0])
    return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)""",
)


@dataclass(frozen=True)
class ReturnWheels:
    torch: Path
    retpath: Path
    retpath_cpu: Path
    finder: Path
    opaquefn: Path
    specs: Path
    twomods: Path
    search: Path
    search_core: Path
    search_core_bad: Path
    search_local: Path
    verpick: Path
    verpick_old: Path
    targets: Path
    targets_bad: Path
    verlib: Path
    verlib_bad: Path


def _plain(out: Path, filename: str) -> Path:
    name = filename.split(".")[0].replace("-", "_")
    return build_shared(out, filename, f"int {name}_fn(void) {{ return 1; }}\n")


def cuda_torch(work: Path, out: Path) -> Path:
    """A fixture torch 2.9.0 whose ``torch.version.cuda`` is set (``torch/version.py``), with a
    ``libc10.so``."""
    c10 = build_shared(work / "torch", "libc10.so", "int c10(void) { return 1; }\n", soname="libc10.so")
    files = {"torch/__init__.py": TORCH_INIT + TORCH_CUDA, "torch/version.py": TORCH_VERSION,
             "torch/lib/libc10.so": c10}  # fmt: skip
    return build_wheel(out, "torch", "2.9.0", files, tag=TAG)


def _needing(out: Path, filename: str, absent: Path) -> Path:
    return build_shared(
        out, filename, "extern int gone(void); int k(void) { return gone(); }\n", link=[absent]
    )


def build_return_wheels(root: Path) -> ReturnWheels:
    work, out = root / "build", root / "wheels"
    torch, absent = cuda_torch(work, out), gone_library(work)
    code = {"retpath/__init__.py": RETPATH_INIT, "retpath/_paths.py": RETPATH_PATHS}
    retpath = build_wheel(out / "r", "retpath", "1.0", {
        **code,
        "retpath/libretpath_cuda130.so": _plain(work / "r", "libretpath_cuda130.so"),
        "retpath/libretpath_cuda128.so": _needing(work / "r", "libretpath_cuda128.so", absent),
        "retpath/libretpath_cpu.so": _needing(work / "r", "libretpath_cpu.so", absent),
    }, tag=TAG)  # fmt: skip
    retpath_cpu = build_wheel(out / "rc", "retpath", "1.0", {
        **code,
        "retpath/libretpath_cuda128.so": _plain(work / "rc", "libretpath_cuda128.so"),
        "retpath/libretpath_cpu.so": _needing(work / "rc", "libretpath_cpu.so", absent),
    }, tag=TAG)  # fmt: skip
    finder = build_wheel(out, "finder", "1.0", {
        "finder/__init__.py": FINDER_INIT, "finder/_utils.py": FINDER_UTILS,
        **{f"finder/libfinder_core{v}.so": _needing(work / "f", f"libfinder_core{v}.so", absent)
           for v in (1, 2, 3)},
    }, tag=TAG)  # fmt: skip
    opaquefn = build_wheel(out, "opaquefn", "1.0", {
        "opaquefn/__init__.py": OPAQUEFN, "opaquefn/which.json": b'{"lib": "libopaque.so"}\n',
        "opaquefn/libopaque.so": _needing(work / "o", "libopaque.so", absent),
    }, tag=TAG)  # fmt: skip
    specs = build_wheel(out, "specs", "1.0", {
        "specs/__init__.py": SPECS_INIT, "specs/_specs.py": SPECS_SPECS,
        "specs/libspecs_cuda130.so": _plain(work / "s", "libspecs_cuda130.so"),
        "specs/libspecs_cuda128.so": _needing(work / "s", "libspecs_cuda128.so", absent),
        "specs/libspecs_cpu.so": _needing(work / "s", "libspecs_cpu.so", absent),
    }, tag=TAG)  # fmt: skip
    twomods = build_wheel(out, "twomods", "1.0", {
        "twomods/__init__.py": TWOMODS_INIT, "twomods/_one.py": TWOMODS_ONE, "twomods/_two.py": TWOMODS_TWO,
        "twomods/libtwo_a130.so": _plain(work / "t", "libtwo_a130.so"),
        "twomods/libtwo_b130.so": _plain(work / "t", "libtwo_b130.so"),
        "twomods/libtwo_c130.so": _needing(work / "t", "libtwo_c130.so", absent),
    }, tag=TAG)  # fmt: skip
    search = build_wheel(out, "searchlib", "1.0", {"searchlib/__init__.py": SEARCH_INIT}, tag=TAG)
    core = "searchlib/wheel_lib/libsearchlib_core.so"
    search_core = build_wheel(out / "sc", "searchlib_core", "1.0", {
        core: _plain(work / "sc", "libsearchlib_core.so"),
    }, tag=TAG)  # fmt: skip
    search_core_bad = build_wheel(out / "sb", "searchlib_core", "1.0", {
        core: _needing(work / "sb", "libsearchlib_core.so", absent),
    }, tag=TAG)  # fmt: skip
    search_local = build_wheel(out / "sl", "searchlib", "1.0", {"searchlib/__init__.py": SEARCH_LOCAL_INIT},
                               tag=TAG)  # fmt: skip
    verpick = build_wheel(out / "v", "verpick", "1.0", {
        "verpick/__init__.py": VERPICK_INIT,
        "verpick/libverpick_torch29-cuda.so": _plain(work / "v", "libverpick_torch29-cuda.so"),
        "verpick/libverpick_torch29-cpu.so": _needing(work / "v", "libverpick_torch29-cpu.so", absent),
        "verpick/libverpick_torch28-cuda.so": _needing(work / "v", "libverpick_torch28-cuda.so", absent),
    }, tag=TAG)  # fmt: skip
    verpick_old = build_wheel(out / "vo", "verpick", "1.0", {
        "verpick/__init__.py": VERPICK_INIT,
        "verpick/libverpick_torch28-cuda.so": _plain(work / "vo", "libverpick_torch28-cuda.so"),
    }, tag=TAG)  # fmt: skip
    built = {}
    for name, extra in (("targets", _plain), ("targets_bad", None)):
        lib = (extra(work / name, "libtargets_extra.so") if extra is not None
               else _needing(work / name, "libtargets_extra.so", absent))  # fmt: skip
        built[name] = build_wheel(out / name, "targets", "1.0", {
            "targets/__init__.py": TARGETS_INIT, "targets/target.extra.json": b'{"variant": "cuda"}\n',
            "targets/libtargets_extra.so": lib,
            "targets/libtargets_default.so": _needing(work / name, "libtargets_default.so", absent),
        }, tag=TAG)  # fmt: skip
    for name, good in (("verlib", True), ("verlib_bad", False)):
        core = (_plain(work / name, "libverlib_core.so") if good
                else _needing(work / name, "libverlib_core.so", absent))  # fmt: skip
        built[name] = build_wheel(out / name, "verlib", "1.0", {
            "verlib/__init__.py": VERLIB_INIT, "verlib/docs/__init__.py": b"",
            "verlib/docs/version.py": VERLIB_VERSION, "verlib/libverlib_core.so": core,
            "verlib/libverlib_genai.so": _needing(work / name, "libverlib_genai.so", absent),
        }, tag=TAG)  # fmt: skip
    return ReturnWheels(
        torch, retpath, retpath_cpu, finder, opaquefn, specs, twomods, search, search_core, search_core_bad,
        search_local, verpick, verpick_old, built["targets"], built["targets_bad"], built["verlib"],
        built["verlib_bad"],
    )  # fmt: skip
