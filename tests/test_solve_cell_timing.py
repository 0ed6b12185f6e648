"""A kernel's own Python decides when its libraries load, and the solve's cell counts them by that.

A library the package loads inside ``try/except OSError`` (an optional load) that cannot load is a warning
of the cell: the set imports. A library loaded on first use (by a function the import does not call) that
cannot load fails the cell, in the loader's words. Both are compared with a real import and a real call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cbuild import build_shared
from support.indexserver import IndexServer
from support.solve_stacks import C10_CALL, C10_DECL, solve_argv
from support.stacks import ABI3_TAG, PY_TAG, _module, _torch
from support.venvs import run_unpacked
from support.wheelbuild import build_wheel

from abiprobe.cli import main

NAME = f"cu130-sm120-{PY_TAG}-manylinux_2_28_x86_64"
STACK_TOML = """
[stack]
members = [
  { role = "torch", names = ["torch"] },
  { role = "kernel", names = ["sglang-kernel"] },
]
"""
ABSENT = "libabsent_dep.so.1"
OPTIONAL_INIT = b"""
import ctypes, os

try:
    _opt = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libopt.so"))
except OSError:
    _opt = None
"""
FIRST_USE_INIT = b"""
import ctypes, os

def enable():
    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libfeature.so"))
"""

SYSTEM_ONLY = "libabiprobe_absent_sys.so.1"
FIRST_USE_SYSTEM_INIT = b"""
import ctypes


def enable():
    lib = _find()
    if lib is None:
        raise RuntimeError("sgl_kernel: this feature needs libabiprobe_absent_sys.so.1 from the system")
    return lib


def _find():
    for name in ("libabiprobe_absent_sys.so.1",):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    return None
"""


def _kernel(out: Path, version: str, c10: Path, init: bytes, lib: str, absent: Path) -> Path:
    d = out / f"k{version}"
    ops = _module(
        d,
        "common_ops.abi3.so",
        "common_ops",
        cxx=True,
        link=(c10,),
        decls=C10_DECL % "unsigned int",
        body=C10_CALL,
    )
    needs = build_shared(
        d, lib, "int feature(void) { return absent_dep(); } int absent_dep(void);", link=[absent]
    )
    files = {"sgl_kernel/__init__.py": init, "sgl_kernel/common_ops.abi3.so": ops, f"sgl_kernel/{lib}": needs}
    return build_wheel(
        d / "wheels", "sglang-kernel", version, files, tag=ABI3_TAG, requires_dist=["torch==2.9.0"]
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("cell-timing")
    torch, c10, _ = _torch(out / "torch", "2.9.0", unsigned=True, aoti=True)
    absent = build_shared(out / "absent", ABSENT, "int absent_dep(void) { return 3; }", soname=ABSENT)
    cudart = build_shared(
        out / "rt",
        "libcudart.so.13",
        "int cudaRuntimeGetVersion(int* v) { *v = 13000; return 0; }",
        soname="libcudart.so.13",
    )
    runtime = build_wheel(
        out / "rt" / "wheels",
        "nvidia-cuda-runtime",
        "13.0.96",
        {"nvidia/cu13/lib/libcudart.so.13": cudart},
        tag="py3-none-manylinux_2_28_x86_64",
    )
    stack = out / "stack.toml"
    stack.write_text(STACK_TOML)
    return {
        "torch": torch,
        "runtime": runtime,
        "optional": _kernel(out, "0.5.0", c10, OPTIONAL_INIT, "libopt.so", absent),
        "first_use": _kernel(out, "0.5.1", c10, FIRST_USE_INIT, "libfeature.so", absent),
        "system_only": _kernel(out, "0.5.2", c10, FIRST_USE_SYSTEM_INIT, "libunused.so", absent),
        "stack": stack,
    }


def _solved(built: dict[str, Path], keys: tuple[str, ...], tmp_path: Path) -> dict[str, Any]:
    """Solve the stack over a local index serving the wheels ``keys`` name: the matrix document."""
    with IndexServer() as server:
        for key in keys:
            server.add_wheel(built[key])
        argv = solve_argv(
            server.index_url, tmp_path / "cache", tmp_path / "out", "--stack", str(built["stack"])
        )
        assert main(argv) == 0
    doc: dict[str, Any] = json.loads((tmp_path / "out" / f"{NAME}.json").read_text())
    return doc


def _cell(doc: dict[str, Any], member: str) -> dict[str, Any]:
    return next(c for c in doc["cells"] if member in c["members"])


def _real(wheel: Path, site: Path, code: str) -> tuple[int, str]:
    """Unpack the kernel wheel and run ``code`` after importing it: exit status, last stderr line."""
    run = run_unpacked(site, (wheel,), code)
    lines = run.stderr.strip().splitlines()
    return run.returncode, lines[-1] if lines else ""


def test_an_optional_load_warns_the_cell_and_a_first_use_load_fails_it(
    built: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the stack is solved
    doc = _solved(built, ("torch", "runtime", "optional", "first_use"), tmp_path)
    # THEN 0.5.1, whose first-use library cannot load, fails its cell in the loader's words
    newer = _cell(doc, "sglang-kernel==0.5.1")
    assert newer["status"] == "fail"
    assert newer["checks"]["sonames"] == "fail"
    assert ABSENT in json.dumps(newer)
    # AND 0.5.0, whose optional library cannot load, only warns: the set imports, and it is chosen
    older = _cell(doc, "sglang-kernel==0.5.0")
    assert older["status"] == "warn"
    assert older["checks"]["sonames"] == "warn"
    assert doc["chosen"]["kernel"] == "sglang-kernel==0.5.0"
    # AND real imports agree: both import; 0.5.1's first use fails on the library the cell names
    assert _real(built["optional"], tmp_path / "s0", "import sgl_kernel; assert sgl_kernel._opt is None") == (
        0,
        "",
    )
    code, line = _real(built["first_use"], tmp_path / "s1", "import sgl_kernel")
    assert code == 0
    code, line = _real(built["first_use"], tmp_path / "s1", "import sgl_kernel; sgl_kernel.enable()")
    assert code == 1 and f"{ABSENT}: cannot open shared object file" in line


def test_a_first_use_error_of_the_package_after_only_system_libraries_were_missing_warns_the_cell(
    built: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN 0.5.2, whose enable() looks for a library by bare name (the system's search) and raises its
    # own error when none loads: an optional backend's runtime that the user installs
    doc = _solved(built, ("torch", "runtime", "system_only"), tmp_path)
    # THEN its cell warns (a feature that may not load), naming the library, and the set is chosen
    cell = _cell(doc, "sglang-kernel==0.5.2")
    assert cell["status"] == "warn" and cell["checks"]["sonames"] == "warn", cell
    assert SYSTEM_ONLY in cell["explanation"] and "its own raise" in cell["explanation"]
    assert doc["chosen"]["kernel"] == "sglang-kernel==0.5.2"
    # AND real runs agree: importing works, and using the feature raises the package's own error
    assert _real(built["system_only"], tmp_path / "s2", "import sgl_kernel") == (0, "")
    code, line = _real(built["system_only"], tmp_path / "s2", "import sgl_kernel; sgl_kernel.enable()")
    assert code == 1 and line == f"RuntimeError: sgl_kernel: this feature needs {SYSTEM_ONLY} from the system"
