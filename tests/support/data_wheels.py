"""Real wheels for what a package computes before it loads native code (issue 26, beyond
support.pattern_wheels): values read from its own data files, version guards, loads reached from methods.

- ``torch``: support.pattern_wheels' fixture torch (2.9.0, CUDA 13.0).
- ``datalist``: fbgemm-gpu's way: reads ``data/target.*.json`` (only ``default`` is in the wheel) and
  loads, in order, the libraries listed for each target found, through a helper that re-raises the
  load's error unless the file's variant is ``docs``; the second library has an undefined symbol.
- ``datalist_docs``: the same code with ``"variant": "docs"``: the failure is swallowed.
- ``guard_skip`` / ``guard_load``: torchao's way: compares its own version (``importlib.metadata``) and
  ``torch.__version__`` (parsed by a function of its own) with the pairs it was built for and skips its
  ``_C*.so`` (an undefined symbol) unless they match; ``guard_skip`` was built for torch 2.8.0, so it
  skips, ``guard_load`` for 2.9.0, so it loads.
- ``methodload``: warp-lang's way: ``init()`` makes a ``Runtime`` whose ``__init__`` calls
  ``self.load_dll(path)`` (``ctypes.CDLL``, re-raised as RuntimeError); the library needs an absent one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.cbuild import build_shared
from support.pattern_wheels import TORCH_INIT, TORCH_VERSION, gone_library
from support.probe_wheels import TAG
from support.wheelbuild import build_wheel

DATALIST = b"""import json
import os

import torch


def _info(target):
    try:
        path = os.path.join(os.path.dirname(__file__), "data", f"target.{target}.json")
        with open(path, "r") as file:
            data = json.load(file)
    except Exception:
        data = {}
    return data


def _load(filename, version, no_throw=False):
    if version == "INTERNAL":
        print("a local build")
    try:
        torch.ops.load_library(os.path.join(os.path.dirname(__file__), filename))
    except Exception as error:
        if not no_throw:
            raise error


_INFOS = {target: _info(target) for target in ["default", "extra"]}
_INFOS = {k: v for (k, v) in _INFOS.items() if v}
_LIBRARIES = {"default": ["libdl_first", "libdl_second"], "extra": ["libdl_extra"]}

for target, info in _INFOS.items():
    for library in _LIBRARIES.get(target, []):
        _load(f"{library}.so", info["version"], info["variant"] == "docs")
"""
GUARD = b"""import logging
import re
from importlib.metadata import PackageNotFoundError, version

import torch

try:
    __version__ = version("%(dist)s")
except PackageNotFoundError:
    __version__ = "unknown"


def _parse_version(text):
    match = re.match(r"(\\d+)\\.(\\d+)\\.(\\d+)", text)
    if match:
        return [int(x) for x in match.groups()]
    raise ValueError(f"Invalid version string format: {text}")


skip_loading = True
if not ("+git" in __version__):
    compatible = [(_parse_version("1.0.0"), _parse_version("%(torch)s"))]
    current = _parse_version(torch.__version__)
    for mine, theirs in compatible:
        if _parse_version(__version__) == mine and current == theirs:
            skip_loading = False
            break

if skip_loading:
    logging.getLogger(__name__).warning("Skipping import of cpp extensions: incompatible torch")
else:
    from pathlib import Path

    for file in list(Path(__file__).parent.glob("_C*.so")):
        torch.ops.load_library(str(file))
"""
METHOD_INIT = b"""from ._src.context import init
"""
METHOD_CONTEXT = b"""import ctypes
import os

_HOME = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))


class Runtime:
    def __init__(self):
        bin_path = os.path.join(_HOME, "bin")
        if os.name == "nt":
            core = os.path.join(bin_path, "core.dll")
        else:
            core = os.path.join(bin_path, "core.so")
        self.core = self.load_dll(core)

    def load_dll(self, dll_path):
        try:
            dll = ctypes.CDLL(dll_path)
        except OSError as e:
            raise RuntimeError(f"Failed to load the shared library '{dll_path}'") from e
        return dll


runtime = None


def init():
    global runtime
    if runtime is None:
        runtime = Runtime()
"""


@dataclass(frozen=True)
class DataWheels:
    torch: Path
    datalist: Path
    datalist_docs: Path
    guard_skip: Path
    guard_load: Path
    methodload: Path


def _undefined(out: Path, filename: str, symbol: str) -> Path:
    return build_shared(
        out, filename, f"extern int {symbol}(void); int f_{symbol}(void) {{ return {symbol}(); }}\n"
    )


def build_data_wheels(root: Path) -> DataWheels:
    work, out = root / "build", root / "wheels"
    torch_lib = build_shared(
        work / "torch", "libc10.so", "int c10_fn(void) { return 1; }\n", soname="libc10.so"
    )
    torch = build_wheel(out, "torch", "2.9.0", {
        "torch/__init__.py": TORCH_INIT, "torch/version.py": TORCH_VERSION, "torch/lib/libc10.so": torch_lib,
    }, tag=TAG)  # fmt: skip
    absent = gone_library(work)
    first = build_shared(work / "dl", "libdl_first.so", "int dl_first(void) { return 1; }\n")
    second = _undefined(work / "dl", "libdl_second.so", "dl_missing")
    needs_gone = "extern int gone(void); int e(void) { return gone(); }\n"
    extra = build_shared(work / "dl", "libdl_extra.so", needs_gone, link=[absent])

    def datalist_wheel(folder: str, variant: str) -> Path:
        info = b'{"version": "1.0.0", "target": "default", "variant": "%s"}\n' % variant.encode()
        return build_wheel(out / folder, "datalist", "1.0.0", {
            "datalist/__init__.py": DATALIST, "datalist/data/target.default.json": info,
            "datalist/libdl_first.so": first, "datalist/libdl_second.so": second,
            "datalist/libdl_extra.so": extra,
        }, tag=TAG)  # fmt: skip

    guard_c = _undefined(work / "gu", "_C.abi3.so", "guard_missing")

    def guard_wheel(dist: str, built_for: str) -> Path:
        source = GUARD % {b"dist": dist.encode(), b"torch": built_for.encode()}
        return build_wheel(out, dist, "1.0.0", {f"{dist}/__init__.py": source, f"{dist}/_C.abi3.so": guard_c},
                           tag=TAG)  # fmt: skip

    core = build_shared(work / "ml", "core.so", "extern int gone(void); int c(void) { return gone(); }\n",
                        link=[absent])  # fmt: skip
    methodload = build_wheel(out, "methodload", "1.0.0", {
        "methodload/__init__.py": METHOD_INIT, "methodload/_src/__init__.py": b"",
        "methodload/_src/context.py": METHOD_CONTEXT, "methodload/bin/core.so": core,
    }, tag=TAG)  # fmt: skip
    return DataWheels(
        torch, datalist_wheel("d", "cuda"), datalist_wheel("dd", "docs"), guard_wheel("guard_skip", "2.8.0"),
        guard_wheel("guard_load", "2.9.0"), methodload,
    )  # fmt: skip


HOMENAME = b"""import ctypes
import json
import os

_HERE = os.path.dirname(__file__)
with open(os.path.join(os.path.expanduser("~"), ".homename-abiprobe.json")) as f:
    _NAME = json.load(f)["lib"]
ctypes.CDLL(os.path.join(_HERE, _NAME))
"""


def build_homename(root: Path) -> Path:
    """``homename``: reads its library's name from a file in the user's home, outside the wheel."""
    absent = gone_library(root)
    lib = build_shared(root / "hn", "libhome.so", "extern int gone(void); int h(void) { return gone(); }\n",
                       link=[absent])  # fmt: skip
    files = {"homename/__init__.py": HOMENAME, "homename/libhome.so": lib}
    return build_wheel(root / "wheels", "homename", "1.0.0", files, tag=TAG)


NVMLUSER = b"""import ctypes
import os

ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libuses_nvml.so"))
"""


def build_nvmluser(root: Path) -> tuple[Path, Path]:
    """``nvmluser``: loads a library that needs the driver's ``libnvidia-ml.so.1`` by DT_NEEDED; and the
    directory of a stub of that library (what a host with the NVIDIA driver has)."""
    stub = build_shared(root / "stub", "libnvidia-ml.so.1", "int nvmlInit_v2(void) { return 0; }\n",
                        soname="libnvidia-ml.so.1")  # fmt: skip
    uses = "extern int nvmlInit_v2(void); int u(void) { return nvmlInit_v2(); }\n"
    lib = build_shared(root / "nu", "libuses_nvml.so", uses, link=[stub])
    files = {"nvmluser/__init__.py": NVMLUSER, "nvmluser/libuses_nvml.so": lib}
    return build_wheel(root / "wheels", "nvmluser", "1.0.0", files, tag=TAG), stub.parent
