"""A stack file declares how its own packages load their shared objects, as the built-in stack does for
torch, and the analysis follows it (abiprobe.model.stack), compared with a real import."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.probe_wheels import TAG, build_extension
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.errors import UsageError
from abiprobe.model.stack import PackageLoading, default_stack, load_stack_file
from abiprobe.model.target import Target

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")
# globdep's __init__ opens its library RTLD_GLOBAL, so its extension (no DT_NEEDED on it) binds to it
INIT = b"""import ctypes
import os

ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "libdep.so"), mode=ctypes.RTLD_GLOBAL)
from . import _ext  # noqa: E402,F401
"""
STACK = """[stack]
members = [
  { role = "torch", names = ["torch"] },
  { role = "dep", names = ["globdep"], loading = [
      { package = "globdep", preload = ["globdep/lib/libdep.so"], read_source = false } ] },
]
"""


@pytest.fixture(scope="module")
def globdep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("globdep")
    dep = build_shared(work, "libdep.so", "int dep_fn(void) { return 7; }\n", soname="libdep.so")
    ext = build_extension(
        work, "_ext.abi3.so", "globdep", "extern int dep_fn(void); int use(void) { return dep_fn(); }"
    )
    files: dict[str, bytes | Path] = {"globdep/__init__.py": INIT, "globdep/lib/libdep.so": dep,
                                      "globdep/_ext.abi3.so": ext}  # fmt: skip
    return build_wheel(work / "wheels", "globdep", "1.0", files, tag=TAG)


def test_a_stack_files_loading_data_is_followed_and_agrees_with_a_real_import(
    globdep: Path, tmp_path: Path
) -> None:
    # GIVEN a stack file saying globdep preloads its library globally before its extension
    path = tmp_path / "stack.toml"
    path.write_text(STACK)
    stack = load_stack_file(path)
    # (torch, named without loading data, keeps the built-in stack's)
    torch, own = stack.loading()
    assert torch.package == "torch"
    assert own == PackageLoading("globdep", preload=("globdep/lib/libdep.so",), read_source=False)
    facts = [wheel_facts_from_path(globdep, unread_sources=BUILT_IN_UNREAD)]
    # WHEN the set is judged with the stack's loading data (on no GPU: the stack's CPU-only member would
    # fail gpu_arch on one, now that the whole stack file reaches the analysis)
    followed = analyze_set(facts, replace(TARGET, arch=None), PROFILE, stack=stack)
    # THEN the extension binds dep_fn to the preloaded library and the set loads
    assert (followed.import_status, followed.status) == ("ok", "ok")
    # AND without it the extension's symbol stays unbound (the library is loaded RTLD_LOCAL by ctypes)
    assert (
        analyze_set(facts, replace(TARGET, arch=None), PROFILE, stack=default_stack()).import_status == "fail"
    )
    # AND a real import agrees with the stack's data
    site = tmp_path / "site"
    zipfile.ZipFile(globdep).extractall(site)
    code = f"import sys; sys.path.insert(0, {str(site)!r}); import globdep"
    run = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_a_loading_table_without_a_package_is_one_readable_error(tmp_path: Path) -> None:
    # GIVEN a stack file whose loading table names no package
    path = tmp_path / "stack.toml"
    path.write_text(
        '[stack]\nmembers = [{ role = "x", names = ["x"], loading = [{ preload = ["x/*.so"] }] }]\n'
    )
    # THEN reading it says what is missing
    with pytest.raises(UsageError, match="each loading table needs package"):
        load_stack_file(path)
