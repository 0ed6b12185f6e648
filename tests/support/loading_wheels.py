"""Real wheels for the ways torch extensions load their shared objects (abiprobe.analyze.units).

- ``torch``: a fixture torch whose ``ops.load_library`` opens a library with ctypes, as torch's does.
- ``visionx``: its ``extension`` module loads ``_C.so``, a plain library (no ``PyInit_``), through
  ``torch.ops.load_library`` from a helper function called at import; ``_C.so`` has an undefined symbol.
- ``audiox``: its ``__init__`` loads ``lib/libaudiox.so`` by path, then imports ``_audiox``, whose
  DT_NEEDED names ``libaudiox.so`` with no RUNPATH: met only because the library is already loaded.
  ``audiox_nopreload`` is the same package without the preload line.
- ``lazyx``: ``kernels()`` loads ``libkernels.so`` (which needs an absent library) on first use; importing
  the package loads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.probe_wheels import TAG, extension_source, python_include
from support.wheelbuild import build_wheel

TORCH_INIT = b"""import ctypes


class _Ops:
    def load_library(self, path):
        ctypes.CDLL(path)


ops = _Ops()
"""
VISIONX_EXTENSION = b"""import os

import torch


def _load_library(name):
    torch.ops.load_library(os.path.join(os.path.dirname(__file__), f"{name}.so"))


_load_library("_C")
"""
AUDIOX_INIT = b"""import ctypes
import os

_LIB = os.path.join(os.path.dirname(__file__), "lib", "libaudiox.so")
ctypes.CDLL(_LIB)
from . import _audiox  # noqa: E402
"""
LAZYX_INIT = b"""import ctypes
import os

_HERE = os.path.dirname(__file__)


def kernels():
    return ctypes.CDLL(os.path.join(_HERE, "libkernels.so"))
"""


@dataclass(frozen=True)
class LoadingWheels:
    torch: Path
    visionx: Path
    audiox: Path
    audiox_nopreload: Path
    lazyx: Path


def build_loading_wheels(root: Path) -> LoadingWheels:
    work, out = root / "build", root / "wheels"
    torch = build_wheel(out, "torch", "2.0.0", {"torch/__init__.py": TORCH_INIT}, tag=TAG)

    vis_c = build_shared(
        work / "vis",
        "_C.so",
        "extern int visionx_missing_kernel(int); int k(int x) { return visionx_missing_kernel(x); }\n",
    )
    init = b"from . import extension  # noqa: F401\n"
    files = {"visionx/__init__.py": init, "visionx/extension.py": VISIONX_EXTENSION, "visionx/_C.so": vis_c}
    visionx = build_wheel(out, "visionx", "1.0", files, tag=TAG)

    libaudiox = build_shared(
        work / "aud", "libaudiox.so", "int audiox_fn(void) { return 3; }\n", soname="libaudiox.so"
    )
    body = "extern int audiox_fn(void); int use(void) { return audiox_fn(); }"
    source = extension_source("audiox", body).replace("_ext", "_audiox")  # the module audiox._audiox
    audiox_ext = build_shared(
        work / "audext", "_audiox.abi3.so", source, link=[libaudiox], extra=[f"-I{python_include()}"]
    )
    audiox_files: dict[str, bytes | Path] = {
        "audiox/_audiox.abi3.so": audiox_ext,
        "audiox/lib/libaudiox.so": libaudiox,
    }
    audiox = build_wheel(
        out / "a", "audiox", "1.0", {"audiox/__init__.py": AUDIOX_INIT, **audiox_files}, tag=TAG
    )
    nopreload = b"from . import _audiox  # noqa: F401\n"
    audiox_nopreload = build_wheel(
        out / "b", "audiox", "1.0", {"audiox/__init__.py": nopreload, **audiox_files}, tag=TAG
    )

    absent = build_shared(
        work / "absent", "libabsent_lazy.so.3", "int gone(void) { return 0; }\n", soname="libabsent_lazy.so.3"
    )
    kernels = build_shared(
        work / "lazy",
        "libkernels.so",
        "extern int gone(void); int k(void) { return gone(); }\n",
        link=[absent],
    )
    lazyx = build_wheel(
        out, "lazyx", "1.0", {"lazyx/__init__.py": LAZYX_INIT, "lazyx/libkernels.so": kernels}, tag=TAG
    )
    return LoadingWheels(torch, visionx, audiox, audiox_nopreload, lazyx)
