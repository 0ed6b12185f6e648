"""``self.method(a, b)`` of a ``@staticmethod`` binds a and b to its first two parameters: no ``self``
comes first. A package whose method loads a library through a static helper is judged on the path the
helper is given, and a module name given beside a path (``spec_from_file_location("kernel", path)``) is
never taken for the library loaded. Compiled here, and the feature called for real."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cbuild import build_shared
from support.venvs import make_venv, pip_install
from support.wheelbuild import build_wheel

from abiprobe.cli import main

MISSING = "libstaticabsent.so.3"  # no wheel and no system has it
INIT = b"""import ctypes
import os

_own = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libown.so"))
from .gen import Gen
"""
GEN = b"""import ctypes
import importlib.util
import os


class Gen:
    libpath = None

    @staticmethod
    def open_library(filename):
        return ctypes.CDLL(os.path.join(os.path.dirname(__file__), filename))

    @staticmethod
    def import_from_file(module_name, file_path):
        spec = importlib.util.spec_from_file_location(module_name, file_path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def kernels(self):
        return self.open_library("libkernels.so")

    def load_compiled(self, lib_path=None):
        if lib_path is None:
            lib_path = self.libpath
        return self.import_from_file("kernel", lib_path)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("static")
    absent = build_shared(root / "gone", MISSING, "int gone(void) { return 3; }", soname=MISSING)
    kernels = build_shared(
        root / "b", "libkernels.so", "int gone(void);\nint k(void) { return gone(); }\n", link=[absent]
    )
    own = build_shared(root / "b", "libown.so", "int own(void) { return 1; }")
    files: dict[str, bytes | Path] = {
        "staticx/__init__.py": INIT,
        "staticx/gen.py": GEN,
        "staticx/libown.so": own,
        "staticx/libkernels.so": kernels,
    }
    return build_wheel(root / "w", "staticx", "1.0", files, tag="py3-none-manylinux_2_28_x86_64")


def _check(wheel: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["check", str(wheel), "--no-deps", "--json", "-qq", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_a_static_helper_loads_the_path_its_caller_gives(
    wheel: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a method that loads libkernels.so (which needs an absent library) through a static helper
    code, data = _check(wheel, capsys, "--platform", "manylinux_2_28_x86_64")
    python = make_venv(tmp_path / "venv", with_pip=False)
    pip_install(python, "--no-index", wheel)
    real = subprocess.run(
        [str(python), "-I", "-c", "import staticx; staticx.Gen().kernels()"], capture_output=True, text=True
    )
    # THEN the import works and that feature fails on first use, naming the library the loader misses
    assert real.returncode != 0 and f"{MISSING}: cannot open shared object file" in real.stderr
    assert (data["import_status"], code) == ("ok", 128)
    [feature] = data["features"]
    assert (feature["path"], feature["status"]) == ("staticx/libkernels.so", "fail")
    assert MISSING in feature["explanation"]


def test_a_module_name_beside_a_path_is_no_library(wheel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a static helper importing a file it compiles at run time under the module name "kernel",
    # checked for this host (whose loader would judge a library loaded by a bare name)
    code, data = _check(wheel, capsys)
    # THEN no unit is named after the module: its path is nothing the set or the system has to provide
    assert all(u["path"] != "kernel" and not u["path"].endswith(":kernel") for u in data["units"])
    assert [f["path"] for f in data["features"]] == ["staticx/libkernels.so"] and code == 128
