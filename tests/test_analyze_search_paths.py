"""Loader details found on real environments: unversioned libc/libm references, the RPATH loader chain."""

from __future__ import annotations

import sys
from pathlib import Path

from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

BUILT_IN_STACK = default_stack()

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
T = Target.parse(cuda="13.0", python=PY, platform="manylinux_2_28_x86_64")
TAG = "cp310-abi3-manylinux_2_28_x86_64"


def test_unversioned_libm_reference_binds_to_the_interpreters_libm(tmp_path: Path) -> None:
    # GIVEN an extension calling sin() linked without -lm (its reference to sin carries no version)
    so = build_shared(tmp_path, "_m.abi3.so", "double sin(double);\ndouble f(double x) { return sin(x); }")
    wheel = build_wheel(tmp_path / "w", "uses-sin", "1.0", {"uses_sin/_m.abi3.so": so}, tag=TAG)
    # WHEN analysed THEN libm.so.6, loaded by the interpreter, provides it
    a = analyze_set(
        [wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)],
        T,
        builtin_profile("manylinux_2_28_x86_64"),
        stack=BUILT_IN_STACK,
    )
    assert [v.status for v in a.verdicts if v.check == "symbols"] == ["ok"]


def test_rpath_of_the_loading_extension_serves_its_dependencies(tmp_path: Path) -> None:
    # GIVEN pkg.libs/liba.so (no RPATH) needing libb.so, and an extension with RPATH $ORIGIN/../pkg.libs
    libb = build_shared(tmp_path, "libb.so", "int b(void) { return 1; }", soname="libb.so")
    liba = build_shared(
        tmp_path, "liba.so", "int b(void);\nint a(void) { return b(); }", soname="liba.so", link=[libb]
    )
    ext = build_shared(
        tmp_path,
        "_e.abi3.so",
        "int a(void);\nint e(void) { return a(); }",
        link=[liba],
        rpath=["$ORIGIN/../pkg.libs"],
    )
    files = {"pkg/_e.abi3.so": ext, "pkg.libs/liba.so": liba, "pkg.libs/libb.so": libb}
    wheel = build_wheel(tmp_path / "w", "pkg", "1.0", files, tag=TAG)
    # WHEN analysed THEN libb.so is found through the extension's RPATH (the loader chain)
    a = analyze_set(
        [wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)],
        T,
        builtin_profile("manylinux_2_28_x86_64"),
        stack=BUILT_IN_STACK,
    )
    assert [(v.check, v.status) for v in a.verdicts if v.check in ("sonames", "symbols")] == [
        ("sonames", "ok"),
        ("symbols", "ok"),
    ]
