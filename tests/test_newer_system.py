"""A target whose platform is newer than the built-in profile that stands in for it (manylinux_2_36, the
platform of a Debian 12 host, judged with the manylinux_2_34 libraries): the GLIBC_2.N nodes its platform
promises are there, a node of another system library beyond the profile (libstdc++'s GLIBCXX_3.4.30) is
not known either way. Each fixture is compiled here and also imported for real on this host."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import judged_set
from support.venvs import import_in_venv
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import SetAnalysis
from abiprobe.analyze.profiles import profile_for
from abiprobe.binary.elf import read_elf
from abiprobe.model.target import Target

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TAG = f"{PY}-{PY}-manylinux_2_28_x86_64"
INIT = b"""import ctypes
import os

_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "libnewsys.so"))
"""
HYPOT = "#include <math.h>\ndouble newsys(double a, double b) { return hypot(a, b); }\n"
WAIT = """#include <condition_variable>
#include <mutex>
extern "C" void newsys(std::condition_variable *cv, std::mutex *m) {
    std::unique_lock<std::mutex> lock(*m);
    cv->wait(lock);
}
"""


def _wheel(root: Path, source: str, cxx: bool, version: str) -> Path:
    extra = [] if cxx else ["-lm"]
    lib = build_shared(root / "b", "libnewsys.so", source, cxx=cxx, extra=extra)
    with open(lib, "rb") as f:
        needs = {v for n in read_elf(f, str(lib)).version_needs for v in n.versions}
    if version not in needs:
        pytest.skip(f"this host's compiler does not bind {version} ({sorted(needs)})")
    files: dict[str, bytes | Path] = {"newsys/__init__.py": INIT, "newsys/libnewsys.so": lib}
    return build_wheel(root / "w", "newsys", "1.0", files, tag=TAG)


def _judged(wheel: Path, platform: str) -> SetAnalysis:
    target = Target.parse(cuda="13.0", arch="sm120", python=PY, platform=platform)
    return judged_set([wheel], target, profile_for(target.machine, target.glibc))


def _import(wheel: Path, venv: Path) -> tuple[int, str]:
    return import_in_venv(venv, [wheel], "newsys")


def _versions(a: SetAnalysis) -> tuple[str, str]:
    (unit,) = [u for u in a.units if u.path == "newsys/libnewsys.so"]
    (v,) = [v for v in unit.verdicts if v.check == "symbol_versions"]
    return v.status, v.explanation


def test_a_glibc_node_the_platform_promises_is_there(tmp_path: Path) -> None:
    # GIVEN a library calling hypot, which binds hypot@GLIBC_2.35 (newer than the 2.34 profile's libm)
    wheel = _wheel(tmp_path, HYPOT, cxx=False, version="GLIBC_2.35")
    # THEN for a manylinux_2_36 target it loads, as it does on this host
    new = _judged(wheel, "manylinux_2_36_x86_64")
    assert _versions(new)[0] == "ok" and new.import_status == "ok"
    code, last = _import(wheel, tmp_path / "v")
    glibc = tuple(int(x) for x in subprocess.run(["ldd", "--version"], capture_output=True, text=True)
                  .stdout.split("\n")[0].split()[-1].split(".")[:2])  # fmt: skip
    assert (code == 0) is (glibc >= (2, 35)), last
    # AND for a manylinux_2_34 target the loader refuses it, naming the node
    old = _judged(wheel, "manylinux_2_34_x86_64")
    assert old.import_status == "fail" and old.first_error is not None
    assert "version `GLIBC_2.35' not found" in old.first_error.text


def test_another_librarys_node_beyond_the_profile_is_not_known(tmp_path: Path) -> None:
    # GIVEN a C++ library whose std::condition_variable::wait binds GLIBCXX_3.4.30 (GCC 12's libstdc++;
    # the manylinux_2_34 profile's ends at 3.4.29)
    wheel = _wheel(tmp_path, WAIT, cxx=True, version="GLIBCXX_3.4.30")
    # THEN for a manylinux_2_36 target it is neither there nor missing: that system's libstdc++ decides
    new = _judged(wheel, "manylinux_2_36_x86_64")
    status, text = _versions(new)
    assert status == "unknown" and "GLIBCXX_3.4.30" in text, text
    assert new.import_status == "unknown" and new.first_error is None
    # AND this host's libstdc++ (whose compiler built it) has it: the real import works
    assert _import(wheel, tmp_path / "v") == (0, "")
    # AND for a target the profile is exactly (manylinux_2_34) it is missing
    old = _judged(wheel, "manylinux_2_34_x86_64")
    assert old.import_status == "fail" and old.first_error is not None
    assert "version `GLIBCXX_3.4.30' not found" in old.first_error.text
