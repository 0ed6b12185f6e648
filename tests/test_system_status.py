"""For a target that is not this host, a library outside its profile that a distribution package ships is
status ``system`` ("loads where the system has X"), naming the packages; ``fail`` is for what no system
library can fix."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.schemas import assert_valid
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.cli import main
from abiprobe.host.ldconfig import profile_from_host
from abiprobe.host.loader_inputs import HostLoader
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

BUILT_IN_STACK = default_stack()

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
PLAT = "manylinux_2_28_x86_64"
T = Target.parse(cuda="13.0", python=PY, platform=PLAT)
P228 = builtin_profile(PLAT)
PACKAGES = "Debian/Ubuntu: libnuma1; RHEL family: numactl-libs"


def _kernel(out: Path, soname: str) -> Path:
    """An abi3 kernel module calling into ``soname`` (a real library, linked by path, not shipped)."""
    lib = build_shared(out / "sys", soname, "int numa_available(void) { return 0; }", soname=soname)
    src = "int numa_available(void);\nint k(void) { return numa_available(); }\n"
    src += "void *PyInit_ops(void) { return 0; }\n"
    ext = build_shared(out / soname, "ops.abi3.so", src, link=[lib])
    files: dict[str, bytes | Path] = {
        "numakern/__init__.py": b"from . import ops\n",
        "numakern/ops.abi3.so": ext,
    }
    return build_wheel(out / soname / "w", "numakern", "1.0", files, tag=f"cp39-abi3-{PLAT}")


@pytest.fixture(scope="module")
def numa_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _kernel(tmp_path_factory.mktemp("numa"), "libnuma.so.1")


def _loader_verdicts(wheel: Path, profile: object) -> dict[str, tuple[str, str]]:
    a = analyze_set(
        [wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD)], T, profile, stack=BUILT_IN_STACK
    )  # type: ignore[arg-type]
    return {
        v.check: (v.status, v.explanation)
        for u in a.units
        for v in u.verdicts
        if v.check in ("sonames", "symbols")
    }


def test_library_a_distribution_package_ships_loads_where_the_system_has_it(numa_wheel: Path) -> None:
    # GIVEN a kernel needing libnuma.so.1, which manylinux_2_28 does not promise
    got = _loader_verdicts(numa_wheel, P228)
    # THEN it is not a plain failure: it loads where the system has libnuma.so.1, from these packages
    assert got["sonames"] == (
        "system",
        f"libnuma.so.1 is not a system library of {PLAT}: loads where the system has it ({PACKAGES})",
    )
    # AND the symbol only that library defines is the same condition, said so
    assert got["symbols"][0] == "system" and got["symbols"][1].endswith(
        "(may be defined by libnuma.so.1, which that system would provide)"
    )


def test_library_no_package_is_known_to_ship_still_fails(tmp_path: Path) -> None:
    got = _loader_verdicts(_kernel(tmp_path, "libnotapackage.so.3"), P228)
    assert (got["sonames"][0], got["symbols"][0]) == ("fail", "fail")


def test_on_this_host_a_missing_library_fails_and_names_its_packages(numa_wheel: Path) -> None:
    # GIVEN this host's loader with nothing on its paths (the host lacks libnuma.so.1, and libc)
    empty = Path("/nonexistent/abiprobe")
    host = profile_from_host(
        ["libnuma.so.1"], loader=HostLoader(cache=empty, conf=empty, library_path=None, system_dirs=())
    )
    status, text = _loader_verdicts(numa_wheel, host)["sonames"]
    # THEN it fails here (the host is what it is), and says which package would provide it
    assert status == "fail"
    assert text.startswith(f"libnuma.so.1 not found by this host's loader (it is in {PACKAGES})")


def test_check_exit_status_and_headline_for_a_system_library(
    numa_wheel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", str(numa_wheel), "--no-deps", "--python", PY, "--platform", PLAT, "--profile", PLAT]
    capsys.readouterr()
    code = main([*args, "--json"])
    data = assert_valid(json.loads(capsys.readouterr().out), "check")
    assert (code, data["status"], data["import_status"]) == (4, "system", "system")
    main(args)
    headline = capsys.readouterr().out.strip().splitlines()[-1]
    assert headline.startswith(f"LOADS WHERE THE SYSTEM HAS libnuma.so.1 ({PACKAGES})")
