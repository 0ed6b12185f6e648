"""The stable ABI an ``abi3`` extension may use is the one of its tag's ``cpXY`` (CPython's own table)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.profiles import builtin_profile, stable_abi_added, stable_abi_names
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

BUILT_IN_STACK = default_stack()

T = Target.parse(cuda="13.0", python="cp312", platform="manylinux_2_28_x86_64")
P228 = builtin_profile("manylinux_2_28_x86_64")
# added to the stable ABI in 3.12 by Misc/stable_abi.toml (onnx's cp312-abi3 extension uses them)
USES_312 = """
void *PyErr_GetRaisedException(void); void PyErr_SetRaisedException(void *);
void *PyInit__ext(void) { void *e = PyErr_GetRaisedException(); PyErr_SetRaisedException(e); return e; }
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("abi3")
    return build_shared(out, "_ext.abi3.so", USES_312)


def _symbols(module: Path, tmp: Path, tag: str) -> tuple[str, str]:
    wheel = build_wheel(tmp, "abi3pkg", "1.0", {"abi3pkg/_ext.abi3.so": module}, tag=tag)
    a = analyze_set(
        [wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)], T, P228, stack=BUILT_IN_STACK
    )
    (v,) = [v for v in a.verdicts if v.check == "symbols"]
    return v.status, v.explanation


def test_abi3_extension_using_its_tags_own_version_additions_is_ok(module: Path, tmp_path: Path) -> None:
    # GIVEN a cp312-abi3 wheel whose extension calls PyErr_GetRaisedException (added in 3.12)
    # WHEN judged for CPython 3.12
    status, _ = _symbols(module, tmp_path, "cp312-abi3-manylinux_2_28_x86_64")
    # THEN nothing is outside the stable ABI its tag declares
    assert status == "ok"


def test_abi3_extension_using_names_newer_than_its_tag_is_warned(module: Path, tmp_path: Path) -> None:
    # GIVEN the same extension in a wheel tagged cp311-abi3 (a floor below 3.12)
    status, text = _symbols(module, tmp_path, "cp311-abi3-manylinux_2_28_x86_64")
    # THEN its 3.12 names are outside the stable ABI of 3.11
    assert status == "warn"
    assert text.startswith("uses PyErr_GetRaisedException outside the stable ABI") and "(and 1 more)" in text


def test_stable_abi_table_carries_each_names_version() -> None:
    added = stable_abi_added()
    assert (added["PyModule_Create2"], added["PyErr_GetRaisedException"], added["Py_TYPE"]) == (
        (3, 2),
        (3, 12),
        (3, 14),
    )
    assert "PyErr_GetRaisedException" in stable_abi_names((3, 12))
    assert "PyErr_GetRaisedException" not in stable_abi_names((3, 11))
