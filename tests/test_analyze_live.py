"""Static predictions on real wheels from the default index, and regressions the live runs uncovered.

The ``live`` tests reproduce docs/live-results.md (static column): they read the facts of real wheels by
HTTP range through ``abiprobe check PROJECT==VERSION`` and skip when the index cannot be reached. The other
tests rebuild, with cc, the shape of a real wheel that once made the static verdict disagree with a real
import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import SetAnalysis, analyze_set
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import Verdict

BUILT_IN_STACK = default_stack()

P228 = builtin_profile("manylinux_2_28_x86_64")
T312 = Target.parse(cuda="13.0", arch="sm90", python="cp312", platform="manylinux_2_28_x86_64")
OLD_EXT = "_mscc.cpython-310-x86_64-linux-gnu.so"


@pytest.fixture(scope="module")
def old_ext_wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """sgl-kernel 0.3.21's shape: a cp310-abi3 wheel that also ships a cpython-310-only module, which
    needs a library (libnuma.so.1 there, libgone.so.1 here) the target lacks."""
    out = tmp_path_factory.mktemp("oldext")
    gone = build_shared(out / "lib", "libgone.so.1", "int gone(void) { return 1; }\n", soname="libgone.so.1")
    src = "extern int gone(void);\nint PyInit__mscc(void) { return gone(); }\n"
    ext = build_shared(out / "ext", OLD_EXT, src, link=[gone])
    files: dict[str, bytes | Path] = {"kern/__init__.py": b"", OLD_EXT: ext}
    return {
        "abi3": build_wheel(out / "a", "kern", "1.0", files, tag="cp310-abi3-manylinux_2_28_x86_64"),
        "cp310": build_wheel(out / "b", "kern", "1.0", files, tag="cp310-cp310-manylinux_2_28_x86_64"),
    }


def _unit_verdicts(a: SetAnalysis, path: str) -> dict[str, Verdict]:
    (unit,) = [u for u in a.units if u.path == path]
    return {v.check: v for v in unit.verdicts}


def test_other_cpython_module_in_an_installable_wheel_is_a_warning(old_ext_wheels: dict[str, Path]) -> None:
    # GIVEN a cp310-abi3 wheel (installs on 3.12) shipping a cpython-310 module with a missing soname
    facts = wheel_facts_from_path(old_ext_wheels["abi3"], unread_sources=BUILT_IN_UNREAD)
    # WHEN the set is analysed for CPython 3.12
    a = analyze_set([facts], T312, P228, stack=BUILT_IN_STACK)
    # THEN nothing fails: 3.12 never imports that file, so the loader never opens it
    verdicts = _unit_verdicts(a, OLD_EXT)
    assert a.ok
    assert (verdicts["sonames"].status, verdicts["tags"].status) == ("warn", "warn")
    assert verdicts["tags"].explanation == (
        "built for CPython 3.10; the target runs cp312 (CPython 3.12 never imports a cpython-310 module)"
    )


def test_other_cpython_module_in_a_wheel_that_does_not_install_still_fails(
    old_ext_wheels: dict[str, Path],
) -> None:
    # GIVEN the same module in a cp310-cp310 wheel (does not install on 3.12)
    facts = wheel_facts_from_path(old_ext_wheels["cp310"], unread_sources=BUILT_IN_UNREAD)
    # WHEN analysed for CPython 3.12 THEN the module's tags verdict still fails
    a = analyze_set([facts], T312, P228, stack=BUILT_IN_STACK)
    assert _unit_verdicts(a, OLD_EXT)["tags"].status == "fail"


# --- live: the static column of docs/live-results.md -------------------------------------------------

TARGET = ["--cuda", "13.0", "--arch", "sm90", "--python", "3.12", "--platform", "manylinux_2_28_x86_64"]


def _check(cache: Path, *items: str) -> tuple[int, dict[str, object]]:
    argv = [sys.executable, "-m", "abiprobe", "check", *items, *TARGET, "--json", "--cache-dir", str(cache)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800, env=dict(os.environ))
    if proc.returncode == 3:
        pytest.skip(f"index unreachable: {proc.stderr.strip()[-200:]}")
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.live
def test_live_sgl_kernel_0_3_21_on_torch_2_11_misses_the_cuda_12_runtime(tmp_path: Path) -> None:
    # GIVEN torch 2.11.0 (CUDA 13 runtime wheels) and sgl-kernel 0.3.21 (built for CUDA 12), read by range
    rc, doc = _check(tmp_path, "torch==2.11.0", "nvidia-cuda-runtime==13.0.96", "sgl-kernel==0.3.21")
    # THEN the selected sm90 extension fails: libcudart.so.12 is not in the set (exit bit 4)
    assert rc & 4
    units = {u["path"]: u for u in doc["units"]}  # type: ignore[attr-defined]
    sonames = [v for v in units["sgl_kernel/sm90/common_ops.abi3.so"]["verdicts"] if v["check"] == "sonames"]
    assert sonames[0]["status"] == "fail"
    assert "libcudart.so.12" in {m["soname"] for m in sonames[0]["evidence"]["missing"]}
