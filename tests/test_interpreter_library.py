"""A library that needs the interpreter's own ``libpython3.X.so.1.0`` (torch-xla's ``_XLAC`` does): a
shared build of CPython has loaded it, so the loader matches it by soname, and a static one has not. For a
target that is not known (``unknown``, and the loader goes on to what else would fail); for an installed
environment the interpreter's own ELF says. Each fixture is compared with a real import."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cbuild import build_shared
from support.held import judged_set
from support.venvs import import_in_venv
from support.wheelbuild import build_wheel

from abiprobe.analyze.profiles import builtin_profile
from abiprobe.cli import main
from abiprobe.host.ldconfig import interpreter_libraries
from abiprobe.model.target import Target

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TAG = f"{PY}-{PY}-manylinux_2_28_x86_64"
TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")
LIBPYTHON = f"libpython{sys.version_info[0]}.{sys.version_info[1]}.so.1.0"
INIT = b"""import ctypes
import os

_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libpyneed.so"))
"""


def _wheel(root: Path, libpython: str, *, gone: bool = False) -> Path:
    """pyneed: its __init__ opens libpyneed.so, which calls Py_IsInitialized and needs ``libpython`` by
    DT_NEEDED (linked against a stand-in with that soname, not shipped); ``gone``: it needs a library
    nobody has as well."""
    stub = build_shared(root / "stub", libpython, "int abiprobe_stub(void) { return 0; }\n", soname=libpython)
    link = [stub]
    src = "int Py_IsInitialized(void);\nint pyneed(void) { return Py_IsInitialized(); }\n"
    if gone:
        absent = build_shared(root / "gone", "libpyneed_gone.so.1", "int g(void) { return 1; }\n",
                              soname="libpyneed_gone.so.1")  # fmt: skip
        link.append(absent)
        src += "int g(void);\nint pyneed_g(void) { return g(); }\n"
    lib = build_shared(root / "b", "libpyneed.so", src, link=link)
    files: dict[str, bytes | Path] = {"pyneed/__init__.py": INIT, "pyneed/libpyneed.so": lib}
    return build_wheel(root / "w", "pyneed", "1.0", files, tag=TAG)


def _import(wheel: Path, venv: Path) -> tuple[int, str]:
    return import_in_venv(venv, [wheel], "pyneed")


def _sonames(unit: Any) -> list[tuple[str, str]]:
    return [(v.status, v.explanation) for v in unit.verdicts if v.check == "sonames"]


def test_the_interpreters_own_library_is_unknown_for_a_target(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, LIBPYTHON)
    a = judged_set([wheel], TARGET, PROFILE)
    (unit,) = [u for u in a.units if u.path == "pyneed/libpyneed.so"]
    ((status, text),) = _sonames(unit)
    # THEN it is neither missing nor found: it depends on how the target's Python was built
    assert status == "unknown" and LIBPYTHON in text and "shared build" in text, text
    assert a.import_status == "unknown" and a.first_error is None
    # AND on this machine (whose Python may be either) the real import agrees with what its ELF says
    shared = LIBPYTHON in interpreter_libraries(sys.executable)
    code, last = _import(wheel, tmp_path / "v")
    assert (code == 0) is shared, last


def test_what_else_fails_is_still_the_first_error(tmp_path: Path) -> None:
    # GIVEN the same library, needing a library nobody has as well
    a = judged_set([_wheel(tmp_path, LIBPYTHON, gone=True)], TARGET, PROFILE)
    # THEN that one is the failure, as the loader (past a libpython it finds) stops there
    assert a.import_status == "fail" and a.first_error is not None
    assert "libpyneed_gone.so.1: cannot open shared object file" in a.first_error.text


def test_another_pythons_library_is_missing(tmp_path: Path) -> None:
    other = "libpython3.99.so.1.0"
    wheel = _wheel(tmp_path, other)
    a = judged_set([wheel], TARGET, PROFILE)
    assert a.import_status == "fail" and a.first_error is not None
    assert f"{other}: cannot open shared object file" in a.first_error.text
    code, last = _import(wheel, tmp_path / "v")
    assert code != 0 and other in last, last


def test_an_installed_environment_is_judged_by_its_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the library installed into a venv of this interpreter
    wheel = _wheel(tmp_path, LIBPYTHON)
    code, last = _import(wheel, tmp_path / "v")
    python = tmp_path / "v" / "bin" / "python"
    # WHEN the environment is checked for this host
    capsys.readouterr()
    exit_code = main(["check", "--installed", "--python", str(python), "--package", "pyneed", "--json"])
    data = json.loads(capsys.readouterr().out)
    (unit,) = [u for u in data["units"] if u["path"] == "pyneed/libpyneed.so"]
    sonames = next(v for v in unit["verdicts"] if v["check"] == "sonames")
    # THEN the verdict is the real import's: found when the interpreter loads its libpython, else missing
    assert (sonames["status"] == "ok") is (code == 0), (sonames, last)
    assert (data["import_status"] in ("ok", "warn")) is (code == 0), (data["import_status"], last)
    assert exit_code != 0 or code == 0
