"""What `import torch` loads from torch/lib: torch._C's DT_NEEDED closure, not every file in the folder."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import pytest
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
EXT = sysconfig.get_config_var("EXT_SUFFIX")
TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")


@pytest.fixture(scope="module")
def torch_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("torch-closure")
    absent = build_shared(
        d / "a", "libabsent.so.0", "int absent(void) { return 0; }\n", soname="libabsent.so.0"
    )
    c10 = build_shared(d, "libc10.so", "int c10_f(void) { return 1; }\n", soname="libc10.so")
    cpu = build_shared(
        d, "libtorch_cpu.so", "extern int c10_f(void); int cpu_f(void) { return c10_f(); }\n",
        soname="libtorch_cpu.so", link=[c10], runpath=["$ORIGIN"],
    )  # fmt: skip
    stray = build_shared(
        d, "libgfortran.so.5", "extern int absent(void); int g(void) { return absent(); }\n",
        soname="libgfortran.so.5", link=[absent],
    )  # fmt: skip
    ext = build_shared(
        d, "_C.so", "extern int cpu_f(void); int c_entry(void) { return cpu_f(); }\n",
        link=[cpu, c10], runpath=["$ORIGIN/lib"],
    )  # fmt: skip
    return build_wheel(
        d / "w",
        "torch",
        "2.15.0",
        {
            "torch/__init__.py": b"",
            f"torch/_C{EXT}": ext,
            "torch/lib/libc10.so": c10,
            "torch/lib/libtorch_cpu.so": cpu,
            "torch/lib/libgfortran.so.5": stray,
        },
        tag=f"{PY}-{PY}-manylinux_2_28_x86_64",
        requires_dist=["nvidia-cuda-runtime==13.0.96"],  # a CUDA build, as torch's own wheels declare
    )


def test_a_torch_lib_library_nothing_needs_is_not_judged(torch_wheel: Path) -> None:
    # GIVEN torch whose torch/lib also holds libgfortran.so.5 (needing a library the target lacks),
    # which neither torch._C nor its dependencies need
    analysis = analyze_set(
        [wheel_facts_from_path(torch_wheel, unread_sources=BUILT_IN_UNREAD)],
        TARGET,
        builtin_profile("manylinux_2_28_x86_64"),
        stack=BUILT_IN_STACK,
    )
    # THEN importing torch is predicted to work, and the stray library is no unit of the analysis
    assert analysis.ok, [v.to_json() for v in analysis.failures()]
    assert "torch/lib/libgfortran.so.5" not in {u.path for u in analysis.units}


def test_a_library_torch_c_needs_is_still_judged(torch_wheel: Path, tmp_path: Path) -> None:
    # GIVEN the same torch but with libabsent.so.0 needed by torch._C's own dependency chain
    import zipfile

    with zipfile.ZipFile(torch_wheel) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if ".dist-info/" not in n}
    members["torch/lib/libtorch_cpu.so"] = members["torch/lib/libgfortran.so.5"]
    broken = build_wheel(tmp_path, "torch", "2.15.1", members, tag=f"{PY}-{PY}-manylinux_2_28_x86_64")
    analysis = analyze_set(
        [wheel_facts_from_path(broken, unread_sources=BUILT_IN_UNREAD)],
        TARGET,
        builtin_profile("manylinux_2_28_x86_64"),
        stack=BUILT_IN_STACK,
    )
    # THEN the missing soname behind torch._C fails the set
    assert any("libabsent.so.0 not found" in v.explanation for v in analysis.failures())
