"""Regressions from a real torch environment that imports fine: no false failures from the loader model."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.wheelbuild import build_wheel

from abiprobe.analyze import analyze_set
from abiprobe.profiles import builtin_profile
from abiprobe.target import Target
from abiprobe.wheel import wheel_facts_from_path

T = Target.parse(cuda="13.0", arch="sm90", python="cp312", platform="manylinux_2_28_x86_64")
P228 = builtin_profile("manylinux_2_28_x86_64")
PURE = "py3-none-any"


@pytest.fixture(scope="module")
def pure_wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pure")
    return {
        "bindings": build_wheel(out, "cuda-bindings", "13.0.0", {"cuda/bindings/__init__.py": b""}, tag=PURE),
        "core": build_wheel(out, "cuda-core", "0.4.0", {"cuda/core/__init__.py": b""}, tag=PURE),
        "build": build_wheel(
            out, "build", "1.3.0", {"build/__init__.py": b"", "build/env.py": b""}, tag=PURE
        ),
        "botorch": build_wheel(
            out, "botorch", "0.16.0", {"botorch/__init__.py": b"", "build/lib/notes.txt": b""}, tag=PURE
        ),
        "clobber": build_wheel(out, "clobber", "1.0.0", {"cuda/bindings/__init__.py": b"x = 1\n"}, tag=PURE),
    }


def _files(wheels: dict[str, Path], *keys: str) -> list[tuple[str, str]]:
    a = analyze_set([wheel_facts_from_path(wheels[k]) for k in keys], T, P228)
    return [(v.status, v.explanation) for v in a.set_verdicts if v.check == "files"]


def test_namespace_package_shared_by_two_wheels_is_not_a_conflict(pure_wheels: dict[str, Path]) -> None:
    assert _files(pure_wheels, "bindings", "core") == [("ok", "no two distributions write the same files")]


def test_directory_shared_without_a_common_file_is_not_a_conflict(pure_wheels: dict[str, Path]) -> None:
    assert _files(pure_wheels, "build", "botorch") == [("ok", "no two distributions write the same files")]


def test_two_distributions_writing_one_file_conflict(pure_wheels: dict[str, Path]) -> None:
    assert _files(pure_wheels, "bindings", "core", "clobber") == [
        (
            "fail",
            "clobber 1.0.0 and cuda-bindings 13.0.0 both install the import package cuda/ "
            "(1 identical paths, e.g. cuda/bindings/__init__.py)",
        )
    ]


ZLIB_USER = """
#include <zlib.h>
int use_zlib(z_stream* s, Bytef* out, uLongf* n, const Bytef* in) {
    return inflate(s, Z_NO_FLUSH) + deflateEnd(s) + compress2(out, n, in, 4, 6) + (int)compressBound(9);
}
void* PyInit_zuser(void) { return (void*)0; }
"""


@pytest.fixture(scope="module")
def zlib_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("zlib")
    ext = "zuser.cpython-312-x86_64-linux-gnu.so"
    so = build_shared(out / "build", ext, ZLIB_USER, link_names=["z"])
    return build_wheel(out, "zuser", "1.0.0", {f"zuser/{ext}": so})


def test_unversioned_zlib_imports_bind_to_the_profiles_libz(zlib_wheel: Path) -> None:
    facts = wheel_facts_from_path(zlib_wheel)
    imports = {(i.name, i.version) for i in facts.elf[0].imports if i.name in ("inflate", "compressBound")}
    a = analyze_set([facts], T, P228)
    (unit,) = a.units
    assert imports == {("inflate", None), ("compressBound", "ZLIB_1.2.0")}
    assert [(v.check, v.status) for v in unit.verdicts if v.check in ("sonames", "symbols")] == [
        ("sonames", "ok"),
        ("symbols", "ok"),
    ]


def test_profile_keeps_zlib_base_definitions_when_cutting_the_export_table() -> None:
    libz = P228.library("libz.so.1")
    assert libz is not None
    assert (libz.provides("inflate", None), libz.provides("gzgets", None)) == (True, True)
