"""The ways packages pick the native code they load, followed with the values the set and the target fix
(issue 26): each fixture judged statically and imported for real (support.pattern_wheels)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.cbuild import build_shared
from support.held import BUILT_IN_UNREAD
from support.pattern_wheels import PatternWheels, build_pattern_wheels
from support.probe_wheels import TAG
from support.stacks import PY_TAG, _module
from support.venvs import loader_line, run_unpacked
from support.wheelbuild import build_wheel

from abiprobe.analyze.analysis import SetAnalysis, UnitAnalysis, analyze_extension, analyze_set
from abiprobe.analyze.first_error import matches_loader_line
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target

BUILT_IN_STACK = default_stack()

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = Target.parse(cuda="13.0", arch="sm120", python=PY, platform="manylinux_2_28_x86_64")
PROFILE = builtin_profile("manylinux_2_28_x86_64")
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> PatternWheels:
    return build_pattern_wheels(tmp_path_factory.mktemp("patterns"))


def _analyze(wheels: PatternWheels, name: str) -> SetAnalysis:
    return _beside_torch(wheels, getattr(wheels, name))


def _beside_torch(wheels: PatternWheels, pkg: Path) -> SetAnalysis:
    """The set of the fixture torch and the wheel ``pkg``, judged for the target."""
    return analyze_set(
        [wheel_facts_from_path(p, unread_sources=BUILT_IN_UNREAD) for p in (wheels.torch, pkg)],
        TARGET,
        PROFILE,
        stack=BUILT_IN_STACK,
    )


def _import(wheels: PatternWheels, name: str, package: str, site: Path) -> tuple[int, str]:
    """Install the fixture torch and the package into one directory and import the package for real:
    the exit status and the last line Python printed, paths cut to their site-packages form."""
    run = run_unpacked(site, (wheels.torch, getattr(wheels, name)), f"import {package}")
    lines = run.stderr.strip().splitlines()
    return run.returncode, (lines[-1].replace(f"{site}/", "") if lines else "")


def _units(a: SetAnalysis, dist: str) -> list[UnitAnalysis]:
    return [u for u in a.units if u.dist.startswith(f"{dist} ")]


def test_a_library_name_computed_from_torch_version_loads_the_file_the_target_gets(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN cudaname, which computes lib..._cu{torch.version.cuda, no dots}.so; torch's version.py: 13.0
    a = _analyze(wheels, "cudaname")
    # THEN the one unit is the _cu130 library, said to be computed from torch's version, and the set loads
    (unit,) = _units(a, "cudaname")
    assert (unit.path, unit.timing, unit.status) == ("cudaname/libcudaname_cu130.so", "import", "ok")
    assert "torch.version.cuda='13.0'" in unit.note
    assert (a.import_status, a.status) == ("ok", "ok")
    # AND a real import loads it
    assert _import(wheels, "cudaname", "cudaname", tmp_path) == (0, "")


def test_a_computed_file_the_wheel_lacks_fails_with_the_packages_own_message(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN missingname, which has only a _cu128 build and raises its own error when the computed file fails
    a = _analyze(wheels, "missingname")
    # THEN the computed _cu130 file is named as absent, and importing fails with the package's message
    absent = next(u for u in a.units if u.path == "missingname/libmissingname_cu130.so")
    assert absent.timing == "optional" and "not in the set" in absent.verdicts[0].explanation
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.raised == "RuntimeError: missingname has no build for CUDA 13.0"
    # AND the loader's first line is the computed file's, the package's exception the last line
    assert a.first_error.text == absent.loader_message.text if absent.loader_message else False
    # AND a real import fails with the package's line, the loader's line being the absent file's
    code, last = _import(wheels, "missingname", "missingname", tmp_path)
    assert code != 0 and last == a.first_error.raised, last
    assert matches_loader_line(a.first_error.text, loader_line(tmp_path, absent.path))


def test_a_try_list_loads_the_first_candidate_that_loads(wheels: PatternWheels, tmp_path: Path) -> None:
    # GIVEN trylist, which tries libtl_v3, libtl_v2, libtl_v1 in turn; v3 needs a library nobody has
    a = _analyze(wheels, "trylist")
    # THEN v3 is a tried candidate (its failure a warning), v2 is what loads, v1 is never tried
    assert [(u.path, u.timing, u.status) for u in _units(a, "trylist")] == [
        ("trylist/libtl_v3.so", "optional", "warn"),
        ("trylist/libtl_v2.so", "import", "ok"),
    ]
    assert "trylist/libtl_v3.so: ImportError" not in _units(a, "trylist")[1].note
    assert "libcudart_gone.so.12" in _units(a, "trylist")[1].note
    assert (a.import_status, a.ok) == ("ok", True)
    # AND a real import passes
    assert _import(wheels, "trylist", "trylist", tmp_path) == (0, "")


def test_a_try_list_where_no_candidate_loads_fails_with_the_packages_message(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN trylist_none, whose every candidate needs a library nobody has
    a = _analyze(wheels, "trylist_none")
    # THEN importing fails with the package's own ImportError, each candidate's first failure listed
    assert a.import_status == "fail" and a.first_error is not None
    assert (
        a.first_error.raised == "ImportError: trylist: none of libtl_v3, libtl_v2, libtl_v1 could be loaded"
    )
    (raised,) = [u for u in a.units if u.kind == "raise"]
    (verdict,) = raised.verdicts
    assert [c["unit"] for c in verdict.evidence["candidates"]] == [
        "trylist/libtl_v3.so", "trylist/libtl_v2.so", "trylist/libtl_v1.so",
    ]  # fmt: skip
    assert all("libcudart_gone.so.12" in c["first_failure"] for c in verdict.evidence["candidates"])
    # AND the loader's first line is the first candidate's
    assert a.first_error.text == verdict.evidence["candidates"][0]["first_failure"]
    # AND a real import fails with the package's line; loading the first candidate, with the loader's
    code, last = _import(wheels, "trylist_none", "trylist", tmp_path)
    assert code != 0 and last == a.first_error.raised, last
    assert matches_loader_line(a.first_error.text, loader_line(tmp_path, "trylist/libtl_v3.so"))


def test_an_accelerator_fallback_chain_loads_only_the_branch_the_target_takes(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN chain: CUDA, else ROCm, else XPU (needs Intel's libsvml.so), else CPU; torch is a CUDA build
    a = _analyze(wheels, "chain")
    # THEN only the CUDA library is a unit, and the set loads (the XPU library is no false fail)
    assert [(u.path, u.timing, u.status) for u in _units(a, "chain")] == [
        ("chain/libchain_cuda.so", "import", "ok")
    ]
    assert (a.import_status, a.status) == ("ok", "ok")
    # AND a real import passes
    assert _import(wheels, "chain", "chain", tmp_path) == (0, "")


def test_a_list_in_init_and_a_glob_load_every_library_in_order(wheels: PatternWheels, tmp_path: Path) -> None:
    # GIVEN listglob: liba then libb (needs liba by soname) from a list, then each ops/*.so of a glob
    a = _analyze(wheels, "listglob")
    # THEN all four are units at import, in that order; libb's need is met by the loaded liba
    assert [(u.path, u.timing) for u in _units(a, "listglob")] == [
        ("listglob/liba.so", "import"),
        ("listglob/libb.so", "import"),
        ("listglob/ops/libop0.so", "import"),
        ("listglob/ops/libop1.so", "import"),
    ]
    assert [u.status for u in _units(a, "listglob")] == ["ok", "ok", "ok", "fail"]
    assert a.first_error is not None
    assert (
        a.first_error.text == "OSError: <site-packages>/listglob/ops/libop1.so: undefined symbol: op1_missing"
    )
    # AND a real import fails with that line
    code, last = _import(wheels, "listglob", "listglob", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_library_name_read_from_a_data_file_of_the_wheel_is_followed(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN netname, which reads its library's name from a JSON file of its wheel at import
    a = _analyze(wheels, "netname")
    # THEN the file's content is a fact: the unit is the library it names, which fails on its need
    (unit,) = _units(a, "netname")
    assert (unit.path, unit.status, unit.timing) == ("netname/libnet.so", "fail", "import")
    assert a.import_status == "fail" and a.first_error is not None
    assert "libcudart_gone.so.12" in a.first_error.text
    # AND a real import fails with that line
    code, last = _import(wheels, "netname", "netname", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_failure_the_package_catches_is_reported_and_does_not_fail_the_import(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN optional, which loads libopt.so (it needs an absent library) in a try whose handler goes on
    a = _analyze(wheels, "optional")
    # THEN the unit fails, labelled optional with the line that catches it; importing the package passes
    (unit,) = _units(a, "optional")
    assert (unit.status, unit.timing) == ("fail", "optional")
    (sonames,) = [v for v in unit.verdicts if v.check == "sonames"]
    assert "optional: the package catches the failure of ctypes.CDLL at optional/__init__.py line 6" in (
        sonames.explanation
    )
    assert a.import_status == "ok"
    # AND a real import passes
    assert _import(wheels, "optional", "optional", tmp_path) == (0, "")


def test_native_code_that_nothing_followed_loads_is_never_ok(wheels: PatternWheels, tmp_path: Path) -> None:
    # GIVEN guarded, whose library path comes from a file, loaded under a test abiprobe cannot know
    facts = wheel_facts_from_path(wheels.guarded, unread_sources=BUILT_IN_UNREAD)
    torch = wheel_facts_from_path(wheels.torch, unread_sources=BUILT_IN_UNREAD)
    a = analyze_set([torch, facts], TARGET, PROFILE, stack=BUILT_IN_STACK)
    # THEN no unit of it is judged, and the set is unknown, not ok, saying why
    assert _units(a, "guarded") == []
    (verdict,) = [v for v in a.set_verdicts if v.subject == "guarded 1.0" and v.status != "ok"]
    assert verdict.status == "unknown" and "none was judged" in verdict.explanation
    assert a.status == "unknown"
    # AND so is the solver's pairwise form
    pair = analyze_extension(facts, [torch], TARGET, PROFILE, None, BUILT_IN_STACK.loading())
    assert [(u.kind, u.status) for u in pair] == [("unjudged", "unknown")]
    # AND a real import fails: ok would have been wrong
    code, last = _import(wheels, "guarded", "guarded", tmp_path)
    assert code != 0 and "libcudart_gone.so.12" in last, last


def test_a_try_list_of_system_names_loads_the_one_the_target_has(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN sysnames, which tries libm.so.9 and then libm.so.6 by bare name
    a = _analyze(wheels, "sysnames")
    # THEN the absent name is a tried candidate, libm.so.6 is found among the target's system libraries
    assert [(u.path, u.status) for u in _units(a, "sysnames")] == [
        ("libm.so.9", "warn"),
        ("libm.so.6", "ok"),
    ]
    assert a.import_status == "ok"
    # AND a real import passes
    assert _import(wheels, "sysnames", "sysnames", tmp_path) == (0, "")


def test_a_try_list_of_system_names_none_present_fails_with_the_packages_message(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN sysnames_none, whose every candidate name is absent from the target
    a = _analyze(wheels, "sysnames_none")
    # THEN importing fails with the package's OSError, each candidate's loader line listed
    assert a.first_error is not None and a.first_error.raised == "OSError: sysnames: no usable system library"
    (raised,) = [u for u in a.units if u.kind == "raise"]
    assert [c["first_failure"] for c in raised.verdicts[0].evidence["candidates"]] == [
        "OSError: libabiprobe_absent.so.9: cannot open shared object file: No such file or directory",
        "OSError: libabiprobe_absent.so.8: cannot open shared object file: No such file or directory",
    ]
    assert a.first_error.text == raised.verdicts[0].evidence["candidates"][0]["first_failure"]
    # AND a real import fails with the package's line; loading the first name, with the loader's
    code, last = _import(wheels, "sysnames_none", "sysnames", tmp_path)
    assert code != 0 and last == a.first_error.raised, last
    assert matches_loader_line(a.first_error.text, loader_line(tmp_path, "libabiprobe_absent.so.9"))


def test_a_load_failure_the_package_wraps_and_then_catches_keeps_the_loaders_line(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN wrapped: its helper re-raises the library's OSError as its own exception, which __init__ catches
    a = _analyze(wheels, "wrapped")
    # THEN the library fails, labelled optional; importing passes; the first error is the loader's line
    (unit,) = _units(a, "wrapped")
    assert (unit.path, unit.status, unit.timing) == ("wrapped/libwrapped.so", "fail", "optional")
    assert (a.import_status, a.status) == ("ok", "fail")
    assert a.first_error is not None
    # AND a real import passes, and the exception it caught was caused by exactly that line
    assert _import(wheels, "wrapped", "wrapped", tmp_path)[0] == 0
    cause = subprocess.run(
        [sys.executable, "-I", "-W", "ignore", "-c",
         f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import wrapped; print(wrapped.CAUSE)"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert matches_loader_line(a.first_error.text, cause.replace(f"{tmp_path}/", "")), cause


def test_a_list_chosen_by_the_targets_machine_loads_only_that_subset(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN subsets, whose __init__ picks its list of libraries by platform.machine()
    a = _analyze(wheels, "subsets")
    # THEN on the x86_64 target only libx86.so is a unit, and its undefined symbol is the first error
    assert [(u.path, u.timing, u.status) for u in _units(a, "subsets")] == [
        ("subsets/libx86.so", "import", "fail")
    ]
    assert a.first_error is not None
    assert a.first_error.text == "OSError: <site-packages>/subsets/libx86.so: undefined symbol: x86_missing"
    # AND a real import (on this x86_64 host) fails with that line
    code, last = _import(wheels, "subsets", "subsets", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


# Shapes seen on a real GPU host's environment (onnxruntime's preload helper, numba's error paths).
PLATFORM_GUARD = b"""
import ctypes

def preload(msvc=True):
    import platform
    is_windows = platform.system() == "Windows"
    if is_windows and msvc:
        try:
            ctypes.CDLL("vcruntime140.dll")
        except OSError:
            print("Microsoft Visual C++ Redistributable is not installed")
"""
ERROR_PATHS = b"""
import ctypes, os

def box(value):
    if value is None:
        raise NotImplementedError("cannot be boxed")
    return ctypes.CDLL(os.path.join(os.path.dirname(__file__), "_box.so"))
"""


def _pure(tmp: Path, name: str, source: bytes) -> Path:
    from support.wheelbuild import build_wheel

    return build_wheel(tmp, name, "1.0", {f"{name}/__init__.py": source}, tag="py3-none-any")


def test_an_and_with_a_value_abiprobe_cannot_know_is_false_when_the_known_side_is(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN `is_windows and msvc` around a Windows-only load (msvc: a parameter abiprobe cannot know)
    pkg = _pure(tmp_path, "winguard", PLATFORM_GUARD)
    a = _beside_torch(wheels, pkg)
    # THEN on Linux the branch is not taken: no unit for the DLL, nothing fails
    assert [u.path for u in _units(a, "winguard")] == []
    assert a.status == "ok"
    # AND calling the helper for real on Linux loads nothing and raises nothing
    run = run_unpacked(tmp_path / "site", (pkg,), "import winguard; winguard.preload()")
    assert (run.returncode, run.stdout) == (0, "")


def test_a_functions_own_error_check_is_no_unit_of_its_own(wheels: PatternWheels, tmp_path: Path) -> None:
    # GIVEN a function that raises for some arguments and loads a library for others
    pkg = _pure(tmp_path, "errpath", ERROR_PATHS)
    a = _beside_torch(wheels, pkg)
    # THEN the raise, reached by no failed load, is no unit: it is not said to fail on first use
    assert "raise" not in [u.kind for u in _units(a, "errpath")]
    assert not any("raises NotImplementedError" in v.text for v in a.verdicts)


OPAQUE_GUARD = b"""
import importlib.util, os

def load_here(path):
    spec = importlib.util.spec_from_file_location("x", os.path.join(path, "x.py"))
    if spec is not None and spec.loader is not None:
        return spec
    raise ImportError("Could not load module x")

load_here(os.path.dirname(__file__))
"""


def test_a_raise_after_a_test_abiprobe_cannot_know_is_no_claim(wheels: PatternWheels, tmp_path: Path) -> None:
    # GIVEN code run at import that returns early under a test abiprobe cannot know, else raises
    # (transformers' direct_transformers_import has this shape)
    pkg = _pure(tmp_path, "guarded", OPAQUE_GUARD)
    a = _beside_torch(wheels, pkg)
    # THEN the raise is not said to happen at import
    assert "raise" not in [u.kind for u in _units(a, "guarded")]
    assert a.import_status == "ok"
    # AND a real import passes
    run = run_unpacked(tmp_path / "site", (pkg,), "import guarded")
    assert run.returncode == 0, run.stderr


DRIVER_PROBE = b"""
import ctypes

try:
    _driver = ctypes.CDLL("libcuda.so.1")
except OSError:
    _driver = None
"""


def test_the_drivers_library_by_its_bare_name_is_there_on_a_gpu_target(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    import dataclasses

    # GIVEN a package that opens libcuda.so.1 by name (torchao, warp, bitsandbytes do)
    pkg = _pure(tmp_path, "drvprobe", DRIVER_PROBE)
    facts = [wheel_facts_from_path(p, unread_sources=BUILT_IN_UNREAD) for p in (wheels.torch, pkg)]
    # THEN on a GPU target the driver's library is found: no feature that will not load
    a = analyze_set(facts, TARGET, PROFILE, stack=BUILT_IN_STACK)
    assert [(u.path, u.status) for u in _units(a, "drvprobe")] == [("libcuda.so.1", "ok")]
    assert a.features == ()
    # AND on a target without the driver the load fails, caught by the package (import still works)
    bare = analyze_set(facts, TARGET, dataclasses.replace(PROFILE, driver=False), stack=BUILT_IN_STACK)
    assert [(u.timing, u.status) for u in _units(bare, "drvprobe")] == [("optional", "fail")]
    assert bare.import_status in ("ok", "warn")


SKIPPED_GUARD = b"""
import importlib, sys

def _ensure_deps():
    if sys.version_info[:2] < (3, 0):
        raise ImportError("needs Python 3")

def optional(name):
    return importlib.import_module(name)

_ensure_deps()
"""
CATCHES_INNER = b"""
for _dependency in ("json",):
    __import__(_dependency)

try:
    from outercatch import _guard, _ext
except ImportError as exc:
    raise ImportError("C extension: not built") from exc
"""


def test_a_raise_in_a_branch_the_target_skips_does_not_run_the_handler_that_catches_it(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN a package that imports a module inside `try/except ImportError: raise ...`, the module raising
    # ImportError only under a version test the target does not take (on a real host: numba's
    # critical-deps check, imported inside pandas' try)
    ext = _module(tmp_path / "ext", f"_ext{SUFFIX}", "_ext")
    files: dict[str, bytes | Path] = {
        "outercatch/__init__.py": CATCHES_INNER,
        "outercatch/_guard.py": SKIPPED_GUARD,
        f"outercatch/_ext{SUFFIX}": ext,
    }
    outer = build_wheel(tmp_path / "o", "outercatch", "1.0", files, tag=f"{PY_TAG}-{PY_TAG}-linux_x86_64")
    a = _beside_torch(wheels, outer)
    # THEN the outer handler's raise is not taken: no raise unit fails, the import is ok
    assert [u.path for u in _units(a, "outercatch") if u.status == "fail"] == []
    assert a.import_status == "ok"
    # AND a real import of the outer package passes
    run = run_unpacked(tmp_path / "site", (outer,), "import outercatch")
    assert run.returncode == 0, run.stderr


FALLS_BACK = b"""import ctypes
import dataclasses
import os
from pathlib import Path

import torch

PACKAGE_DIR = Path(__file__).parent


@dataclasses.dataclass(frozen=True)
class Specs:
    workers: int
    cuda_string: str


def cuda_string():
    major, minor = map(int, torch.version.cuda.split("."))
    return f"{major}{minor}"


def specs():
    if torch.version.cuda is None:
        return None
    # a field the library name never reads, of a value no set fixes
    return Specs(workers=os.cpu_count(), cuda_string=cuda_string())


def library_path(specs):
    return PACKAGE_DIR / f"libfallsback_cuda{specs.cuda_string}.so"


def load():
    path = PACKAGE_DIR / "libfallsback_cpu.so"
    found = specs()
    if found:
        cuda_path = library_path(found)
        if cuda_path.exists():
            path = cuda_path
    return ctypes.CDLL(str(path))


lib = load()
"""


@pytest.mark.parametrize("builds", [("128",), ("128", "130")], ids=["no-cuda130-build", "cuda130-build"])
def test_a_computed_file_the_package_tests_for_and_falls_back_from_is_said(
    wheels: PatternWheels, tmp_path: Path, builds: tuple[str, ...]
) -> None:
    # GIVEN a package that computes libfallsback_cuda{torch.version.cuda, no dot}.so through an instance
    # of its own class (one of whose fields no set fixes), loads it when it exists, else its CPU library
    # (bitsandbytes' way); the fixture torch says CUDA 13.0
    files: dict[str, bytes | Path] = {"fallsback/__init__.py": FALLS_BACK}
    for name in ("cpu", *(f"cuda{b}" for b in builds)):
        lib = f"libfallsback_{name}.so"
        files[f"fallsback/{lib}"] = build_shared(
            tmp_path / "libs", lib, f"int fb_{name}(void) {{ return 1; }}\n"
        )
    pkg = build_wheel(tmp_path / "w", "fallsback", "1.0", files, tag=TAG)
    a = _beside_torch(wheels, pkg)
    units = {u.path: u for u in _units(a, "fallsback")}
    code = "import fallsback; print(fallsback.lib._name.rsplit('/')[-1])"
    run = run_unpacked(tmp_path / "site", (wheels.torch, pkg), code)
    assert run.returncode == 0, run.stderr
    if "130" in builds:
        # THEN with the CUDA 13.0 build in the wheel, that is what loads, and nothing is said of a fallback
        assert list(units) == ["fallsback/libfallsback_cuda130.so"]
        assert units["fallsback/libfallsback_cuda130.so"].status == "ok" and a.status == "ok"
        # AND a real import loads it
        assert run.stdout.strip() == "libfallsback_cuda130.so"
        return
    # THEN without it, the computed file is named as looked for and absent (a warning, with the values it
    # came from), the CPU library is what loads, and the import passes with that warning
    looked = units["fallsback/libfallsback_cuda130.so"]
    assert looked.status == "warn" and looked.timing == "import"
    text = looked.verdicts[0].explanation
    assert "which the set does not have" in text and "torch.version.cuda='13.0'" in text
    assert "it loads fallsback/libfallsback_cpu.so instead" in text
    assert units["fallsback/libfallsback_cpu.so"].status == "ok"
    assert (a.import_status, a.status) == ("warn", "warn") and a.first_error is None
    # AND a real import loads the CPU library
    assert run.stdout.strip() == "libfallsback_cpu.so"


SEARCHED = b"""import ctypes
from pathlib import Path


def _find(library):
    if library == "core":
        prefix = "libsearched_engine"
    else:
        prefix = f"searched_{library}"
    found = [p for p in Path(__file__).parent.iterdir() if p.name.startswith(prefix) and p.suffix == ".so"]
    if len(found) == 1:
        return found[0]
    raise FileNotFoundError(library)


try:
    ctypes.CDLL("libm.so.6")  # a system library by its bare name, found on the target
except OSError:
    pass

_LIB = ctypes.CDLL(str(_find("core")))
"""


def test_a_load_through_a_folder_search_is_the_file_found_beside_other_units(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN a package that first opens a system library by bare name, then its engine library through a
    # folder listing filtered by prefix (transformer-engine's way), a name its argument ("core") does not
    # spell; the engine library needs a library nobody has
    engine = build_shared(
        tmp_path / "libs", "libsearched_engine.so", "extern int gone(void); int k(void) { return gone(); }\n",
        link=[build_shared(tmp_path / "gone", "libcudart_gone.so.12", "int gone(void) { return 0; }\n",
                           soname="libcudart_gone.so.12")],
    )  # fmt: skip
    files: dict[str, bytes | Path] = {
        "searched/__init__.py": SEARCHED,
        "searched/libsearched_engine.so": engine,
    }
    pkg = build_wheel(tmp_path / "w", "searched", "1.0", files, tag=TAG)
    a = _beside_torch(wheels, pkg)
    # THEN the package's own search is run on the set's files: the engine library it finds is the unit,
    # and it fails at import on the absent library (the system library beside it does not make it ok)
    units = {u.path: u for u in _units(a, "searched")}
    engine_unit = units["searched/libsearched_engine.so"]
    assert (engine_unit.timing, engine_unit.status) == ("import", "fail")
    assert not [u for u in units.values() if u.status == "unknown"]
    assert a.import_status == "fail" and a.first_error is not None
    # AND a real import fails with that line
    run = run_unpacked(tmp_path / "site", (wheels.torch, pkg), "import searched")
    code, last = run.returncode, run.stderr.strip().splitlines()[-1]
    assert code != 0 and matches_loader_line(a.first_error.text, last.replace(f"{tmp_path / 'site'}/", "")), (
        last
    )


SYSTEM_DL = b"""import ctypes
import ctypes.util


def _load_libm():
    name = ctypes.util.find_library("m") or "libm.so.6"
    return ctypes.CDLL(name)


LIBM = _load_libm()
"""


def test_a_name_assigned_from_the_systems_search_is_no_unknown_load(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN a package that opens `find_library("m") or "libm.so.6"` through a local name (cuda-pathfinder's
    # way with libdl)
    pkg = _pure(tmp_path, "sysdl", SYSTEM_DL)
    a = _beside_torch(wheels, pkg)
    # THEN the load is the system's own search: no unit that cannot be followed, the import is ok
    assert [u.path for u in _units(a, "sysdl") if u.status == "unknown"] == []
    assert a.import_status == "ok"
    # AND a real import passes
    run = run_unpacked(tmp_path / "site", (pkg,), "import sysdl")
    assert run.returncode == 0, run.stderr


def test_a_library_named_like_a_module_that_no_import_can_load_is_unknown_not_a_failure(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN opened, whose two .abi3.so libraries export no PyInit_ and which its Python never loads itself
    a = _analyze(wheels, "opened")
    # THEN both are units of a time not followed: the one needing an absent library is unknown, not a
    # failure on first use (which variant a caller opens, and whether, is not known), and importing passes
    got = {u.path: (u.timing, u.status) for u in _units(a, "opened")}
    assert got == {
        "opened_hook.abi3.so": ("first_use", "unknown"),
        "opened_hook_cu13.abi3.so": ("first_use", "ok"),
    }
    hook = next(u for u in a.units if u.path == "opened_hook.abi3.so")
    assert "exports no PyInit_opened_hook" in hook.verdicts[0].explanation
    assert "libcudart_gone.so.12" in hook.verdicts[0].explanation
    assert (a.import_status, a.status, a.features) == ("ok", "unknown", ())
    # AND a real import passes, while importing either library as a module fails: no import loads them
    assert _import(wheels, "opened", "opened", tmp_path) == (0, "")
    run = run_unpacked(tmp_path, (), "import opened_hook_cu13")
    assert run.returncode != 0 and "PyInit_opened_hook_cu13" in run.stderr, run.stderr


def test_a_candidate_list_built_in_a_loop_is_not_read_as_its_first_value(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN mutated, whose search starts from [] and grows it with += in a loop before filtering it
    a = _analyze(wheels, "mutated")
    # THEN the load is not dropped as a load of nothing: the package's own search is run on the set's
    # files, and what it finds, lib/libmut.so, fails at import on the library it needs
    (unit,) = _units(a, "mutated")
    assert (unit.path, unit.timing, unit.status) == ("mutated/lib/libmut.so", "import", "fail")
    assert "own search finds" in unit.note
    assert a.import_status == "fail" and a.first_error is not None
    # AND a real import fails with that line
    code, last = _import(wheels, "mutated", "mutated", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_library_needing_a_soname_an_unfollowed_load_may_have_opened_is_unknown_not_failed(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN opensfirst, which opens libcore.so by a search abiprobe cannot follow, then imports _ext,
    # which needs libcore.so by soname alone
    a = _analyze(wheels, "opensfirst")
    # THEN the search is unknown, and so is _ext (libcore.so is in the set and may be open already)
    search, ext = _units(a, "opensfirst")
    assert (search.path, search.status) == ("opensfirst/__init__.py line 13", "unknown")
    assert (ext.path, ext.status) == (f"opensfirst/_ext{SUFFIX}", "unknown")
    assert "may have opened it before this unit" in ext.verdicts[0].explanation
    assert a.import_status == "unknown" and a.first_error is None
    # AND a real import passes (ld.so finds libcore.so among the loaded objects by its soname)
    assert _import(wheels, "opensfirst", "opensfirst", tmp_path) == (0, "")


def test_an_unfollowed_load_that_runs_only_on_request_does_not_hide_a_failure_before_it(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN optfirst, whose plugin load (a path abiprobe cannot follow, in a function called only when an
    # environment variable asks for it) is defined before it imports _ext, which needs libcore.so by
    # soname: a file of the set nothing opens
    a = _analyze(wheels, "optfirst")
    # THEN the plugin load is optional and unknown, and _ext fails at import on libcore.so: the load
    # that cannot be followed never runs before it
    got = {u.path: (u.timing, u.status) for u in _units(a, "optfirst")}
    assert got[f"optfirst/_ext{SUFFIX}"] == ("import", "fail"), got
    assert any(t == "optional" and s == "unknown" for t, s in got.values()), got
    assert a.import_status == "fail" and a.first_error is not None
    assert "libcore.so" in a.first_error.text
    # AND a real import fails with that line
    code, last = _import(wheels, "optfirst", "optfirst", tmp_path)
    assert code != 0 and matches_loader_line(a.first_error.text, last), last


def test_a_helper_returning_the_first_library_that_loads_goes_on_with_it(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN helper, whose _load_first() returns the first of v2, v1 that loads (v2 needs an absent
    # library), else None, on which the caller raises
    a = _analyze(wheels, "helper")
    # THEN v2 is a tried candidate, v1 loads, and the raise on None is not reached
    assert [(u.path, u.status) for u in _units(a, "helper")] == [
        ("helper/libhl_v2.so", "warn"),
        ("helper/libhl_v1.so", "ok"),
    ]
    assert a.import_status == "ok"
    # AND a real import passes
    assert _import(wheels, "helper", "helper", tmp_path) == (0, "")


def test_when_the_helper_returns_none_the_callers_raise_is_what_importing_does(
    wheels: PatternWheels, tmp_path: Path
) -> None:
    # GIVEN helper_none, where neither library loads, so _load_first() returns None
    a = _analyze(wheels, "helper_none")
    # THEN importing fails with the caller's ImportError, the loader's first line v2's
    assert a.import_status == "fail" and a.first_error is not None
    assert a.first_error.raised == "ImportError: helper: no usable libhl library"
    assert "libcudart_gone.so.12" in a.first_error.text and "libhl_v2.so" in a.first_error.unit
    # AND a real import fails with the package's line; loading v2, with the loader's
    code, last = _import(wheels, "helper_none", "helper", tmp_path)
    assert code != 0 and last == a.first_error.raised, last
    assert matches_loader_line(a.first_error.text, loader_line(tmp_path, "helper/libhl_v2.so"))
