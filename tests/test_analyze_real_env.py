"""Regressions from a real torch environment that imports fine: no false failures from the loader model."""

from __future__ import annotations

from pathlib import Path

import pytest
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
