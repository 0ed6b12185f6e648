"""Regressions from a real torch environment that imports fine: no false failures from the loader model."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.venvs import make_venv, pip_install, sh
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

BUILT_IN_STACK = default_stack()

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
    a = analyze_set(
        [wheel_facts_from_path(wheels[k], unread_sources=BUILT_IN_UNREAD) for k in keys],
        T,
        P228,
        stack=BUILT_IN_STACK,
    )
    return [(v.status, v.explanation) for v in a.set_verdicts if v.check == "files"]


def test_namespace_package_shared_by_two_wheels_is_not_a_conflict(pure_wheels: dict[str, Path]) -> None:
    assert _files(pure_wheels, "bindings", "core") == [("ok", "no two distributions write the same files")]


def test_directory_shared_without_a_common_file_is_not_a_conflict(pure_wheels: dict[str, Path]) -> None:
    assert _files(pure_wheels, "build", "botorch") == [("ok", "no two distributions write the same files")]


def test_two_distributions_writing_one_file_conflict(pure_wheels: dict[str, Path]) -> None:
    assert _files(pure_wheels, "bindings", "core", "clobber") == [
        (
            "warn",
            "clobber 1.0.0 and cuda-bindings 13.0.0 both install the import package cuda/ "
            "(1 identical paths, e.g. cuda/bindings/__init__.py): both install, and the files of the one "
            "installed last replace the other's",
        )
    ]


def test_pip_installs_two_distributions_writing_one_file_and_the_last_one_wins(
    pure_wheels: dict[str, Path], tmp_path: Path
) -> None:
    # GIVEN the two wheels the files check warns about, installed into a venv by its own pip, one after
    # the other
    python = make_venv(tmp_path / "venv", with_pip=False)
    for key in ("bindings", "clobber"):
        # THEN pip installs each (no error): the overlap is no install failure, as the warning says
        pip_install(python, "-q", "--no-index", pure_wheels[key])
    # AND the import sees the file of the one installed last
    assert sh(python, "-c", "import cuda.bindings as b; print(b.x)").strip() == "1"


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
    facts = wheel_facts_from_path(zlib_wheel, unread_sources=BUILT_IN_UNREAD)
    imports = {(i.name, i.version) for i in facts.elf[0].imports if i.name in ("inflate", "compressBound")}
    a = analyze_set([facts], T, P228, stack=BUILT_IN_STACK)
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


@pytest.fixture(scope="module")
def cuda_wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """torch + an nvidia wheel holding preloaded libraries, one's DT_NEEDED helper, and dlopen'd plugins."""
    out = tmp_path_factory.mktemp("cudalibs")
    b = out / "build"
    c10 = build_shared(b, "libc10.so", "int c10_marker(void) { return 1; }", soname="libc10.so")
    absent = build_shared(
        b / "absent", "libucs.so.0", "int ucs_init(void) { return 0; }", soname="libucs.so.0"
    )
    plugin = build_shared(
        b,
        "nvshmem_transport_ucx.so.3",
        "int ucs_init(void);\nint plugin(void) { return ucs_init(); }",
        soname="nvshmem_transport_ucx.so.3",
        link=[absent],
    )
    helper = build_shared(
        b,
        "libcufile_helper.so.1",
        "int ucs_init(void);\nint helper(void) { return ucs_init(); }",
        soname="libcufile_helper.so.1",
        link=[absent],
    )
    cufile = build_shared(
        b,
        "libcufile.so.0",
        "int helper(void);\nint cufile(void) { return helper(); }",
        soname="libcufile.so.0",
        link=[helper],
        runpath=["$ORIGIN"],
    )
    cudart = build_shared(b, "libcudart.so.13", "int cudart(void) { return 0; }", soname="libcudart.so.13")
    return {
        "torch": build_wheel(out, "torch", "2.11.0", {"torch/__init__.py": b"", "torch/lib/libc10.so": c10}),
        "plugins": build_wheel(
            out,
            "nvidia-nvshmem-cu13",
            "3.4.5",
            {
                "nvidia/nvshmem/lib/nvshmem_transport_ucx.so.3": plugin,
                "nvidia/cu13/lib/libcudart.so.13": cudart,
            },
        ),
        "cufile": build_wheel(
            out,
            "nvidia-cufile",
            "1.15.0",
            {"nvidia/cu13/lib/libcufile.so.0": cufile, "nvidia/cu13/lib/libcufile_helper.so.1": helper},
        ),
    }


def _units(wheels: dict[str, Path], *keys: str) -> dict[str, list[tuple[str, str]]]:
    a = analyze_set(
        [wheel_facts_from_path(wheels[k], unread_sources=BUILT_IN_UNREAD) for k in keys],
        T,
        P228,
        stack=BUILT_IN_STACK,
    )
    return {u.path: [(v.check, v.status) for v in u.verdicts if v.status != "ok"] for u in a.units}


def test_plugin_opened_on_demand_is_not_judged_at_torch_import(cuda_wheels: dict[str, Path]) -> None:
    assert _units(cuda_wheels, "torch", "plugins") == {}


def test_dt_needed_closure_of_a_preloaded_library_is_judged(cuda_wheels: dict[str, Path]) -> None:
    assert _units(cuda_wheels, "torch", "cufile") == {
        "nvidia/cu13/lib/libcufile.so.0": [("sonames", "fail"), ("symbols", "fail")]
    }
