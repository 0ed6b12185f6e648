"""An unstable-ABI kernel is bound to the torch minor it was built against; a wheel needing no torch
library has no torch range.

Fixtures (tests/support/torch_abi_stacks.py): fixture torch 2.12.0 and 2.13.0, kernels built against
2.12.0 whose every symbol resolves in both but whose static initialiser aborts in 2.13.0 (as real
``TORCH_LIBRARY`` registrations do on a layout change), and a wheel that needs no torch library.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from support.held import BUILT_IN_UNREAD, HELD
from support.indexserver import IndexServer
from support.torch_abi_stacks import TorchAbiStacks, no_torch_wheel, torch_abi_stacks

from abiprobe.analyze.analysis import analyze_set
from abiprobe.analyze.profiles import builtin_profile
from abiprobe.analyze.torch_abi import (
    TorchRelease,
    WheelTorchRange,
    is_torch_import,
    releases_of,
    wheel_torch_range,
)
from abiprobe.analyze.torch_build import pinned_minor, recorded_build_torch
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.cli import main
from abiprobe.model.candidate import Candidate, IndexFile
from abiprobe.model.facts import WheelInfo
from abiprobe.model.stack import Stack, StackMember, default_stack
from abiprobe.model.target import Target
from abiprobe.solve.candidates import StackCandidate
from abiprobe.solve.evaluate import StaticEvaluator
from abiprobe.solve.matrix import Group, MatrixBuilder

BUILT_IN_STACK = default_stack()

PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = ["--cuda", "13.0", "--python", PY, "--platform", "manylinux_2_28_x86_64", "--json"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> TorchAbiStacks:
    return torch_abi_stacks(tmp_path_factory.mktemp("torch-build"))


def _check(capsys: pytest.CaptureFixture[str], *wheels: Path) -> tuple[int, dict[str, Any]]:
    code = main(["check", *map(str, wheels), *TARGET])
    return code, json.loads(capsys.readouterr().out)


def _range(built: TorchAbiStacks, wheel: Path) -> WheelTorchRange:
    releases = releases_of(
        [
            wheel_facts_from_path(built.torch_old, unread_sources=BUILT_IN_UNREAD),
            wheel_facts_from_path(built.torch_new, unread_sources=BUILT_IN_UNREAD),
        ]
    )
    return wheel_torch_range(wheel_facts_from_path(wheel, unread_sources=BUILT_IN_UNREAD), releases)


def _real_load(torch_wheel: Path, kernel_wheel: Path, tmp: Path) -> int:
    """Exit status of a process that dlopens the kernel's extension with the torch's libraries found."""
    for wheel, where in ((torch_wheel, tmp / "torch"), (kernel_wheel, tmp / "kernel")):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(where)
    (ext,) = (tmp / "kernel").rglob("*.so")
    env = {"LD_LIBRARY_PATH": str(tmp / "torch" / "torch" / "lib")}
    script = "import ctypes, sys; ctypes.CDLL(sys.argv[1])"
    done = subprocess.run([sys.executable, "-c", script, str(ext)], env=env, capture_output=True, timeout=60)
    return done.returncode


def _torch_build(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [v for u in doc["units"] for v in u["verdicts"] if "torch_build" in v["evidence"]]


def test_a_pinned_unstable_kernel_fails_with_another_minor_though_every_symbol_resolves(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # GIVEN a kernel of torch's C++ ABI built against 2.12.0, pinning torch==2.12.0, with torch 2.13.0
    code, doc = _check(capsys, built.torch_new, built.kernels["kept-pinned"])
    # THEN every symbol resolves, and still the set fails (not merely blocked by the pin), saying why; the
    # fixture's extension, which no module of it imports, is a feature that will not load (bit 128)
    (v,) = _torch_build(doc)
    assert (doc["status"], v["status"], v["check"], code & 128) == ("fail", "fail", "symbols", 128)
    assert v["explanation"].startswith(
        "built against torch 2.12 (its Requires-Dist pins torch==2.12.0) and loaded into torch 2.13.0"
    )
    assert "runs only with the torch minor it was built against" in v["explanation"]
    # AND the pin that forbids it is named as well
    assert any(s["status"] == "blocked" for s in doc["set_verdicts"])
    # AND a real load of it into 2.13.0 dies in its static initialiser
    assert _real_load(built.torch_new, built.kernels["kept-pinned"], tmp_path) != 0


def test_the_same_kernel_with_the_torch_it_was_built_against_loads(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, doc = _check(capsys, built.torch_old, built.kernels["kept-pinned"])
    assert (code, doc["status"], _torch_build(doc)) == (0, "ok", [])
    assert _real_load(built.torch_old, built.kernels["kept-pinned"], tmp_path) == 0


def test_a_torch_version_in_the_local_label_names_the_build_torch(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a kernel versioned 1.0.0+torch2.12 that declares no torch requirement, with torch 2.13.0
    _code, doc = _check(capsys, built.torch_new, built.kernels["kept-labelled"])
    (v,) = _torch_build(doc)
    assert v["status"] == "fail" and "(its version label +torch2.12)" in v["explanation"]


def test_a_stable_abi_kernel_pinned_to_another_release_stays_blocked(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a kernel importing only the stable C shim, pinned to torch==2.12.0, with torch 2.13.0
    code, doc = _check(capsys, built.torch_new, built.kernels["stable-pinned"])
    # THEN it is not bound to a minor: it loads, and only the pin forbids it
    assert (code, doc["status"], _torch_build(doc)) == (64, "blocked", [])


def test_an_unpinned_kernel_whose_build_torch_is_unknown_stays_a_warning_that_says_so(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a kernel with no pin and no label whose imports both known releases export
    r = _range(built, built.kernels["kept-unpinned"])
    # THEN its torch range is too loose, says the build torch cannot be determined, and names none
    assert (r.verdict, r.built_with) == ("too loose", None)
    assert r.reason.endswith(
        "the torch it was built against cannot be determined, so another minor may abort it"
    )
    code, doc = _check(capsys, built.torch_new, built.kernels["kept-unpinned"])
    assert (code, doc["status"], _torch_build(doc)) == (0, "warn", [])


def test_a_wheel_needing_no_torch_library_has_no_torch_range(
    built: TorchAbiStacks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a wheel whose extension imports a name torch exports, from its own library (no libtorch/libc10)
    wheel = no_torch_wheel(tmp_path)
    # THEN it has no torch range, and check says nothing about torch's C++ ABI
    assert _range(built, wheel).kind == "none"
    _code, doc = _check(capsys, built.torch_old, wheel)
    assert not [v for v in doc["set_verdicts"] if "torch" in v["explanation"] and v["check"] == "requires"]


def test_a_kernel_no_known_release_can_load_says_so_in_plain_words(built: TorchAbiStacks) -> None:
    # GIVEN the kernel importing at::legacy_helper, judged against 2.13.0 alone (which lacks it)
    releases = releases_of([wheel_facts_from_path(built.torch_new, unread_sources=BUILT_IN_UNREAD)])
    r = wheel_torch_range(
        wheel_facts_from_path(built.kernels["removed-unpinned"], unread_sources=BUILT_IN_UNREAD), releases
    )
    assert "no known torch release exports all of them (1 known: 2.13.0)" in r.reason
    assert "none of the known releases" not in r.reason


def _candidate(role: str, path: Path) -> StackCandidate:
    facts = wheel_facts_from_path(path, unread_sources=BUILT_IN_UNREAD)
    name, version, build, tags = parse_wheel_filename(path.name)
    file = IndexFile(filename=path.name, url=path.as_uri(), hashes={"sha256": facts.sha256})
    return StackCandidate(role, Candidate(name, version, build, tags, file), 0, WheelInfo.of(facts))


def test_a_matrix_cell_that_does_not_load_is_fail_with_the_pin_named_too(built: TorchAbiStacks) -> None:
    # GIVEN a matrix of both fixture torches and the pinned kernel built against 2.12.0
    stack = Stack((StackMember("torch", (canonicalize_name("torch"),)), StackMember("kernel", ())))
    rows = [_candidate("torch", built.torch_old), _candidate("torch", built.torch_new)]
    target = Target.parse(cuda="13.0", python=PY, platform="manylinux_2_28_x86_64")
    profile = builtin_profile("manylinux_2_28_x86_64")
    evaluator = StaticEvaluator(
        target, profile, lambda _g: (), torch_candidates=rows, stack=BUILT_IN_STACK, full=HELD
    )
    kernel = _candidate("kernel", built.kernels["kept-pinned"])
    groups = {"torch": tuple(Group("torch", r) for r in rows), "kernel": (Group("kernel", kernel),)}
    matrix = MatrixBuilder(stack, target, evaluator).build(groups)
    # THEN on 2.13.0 the cell fails on the build torch, and the pin that forbids it is named after it
    cell = matrix.cell("torch==2.13.0", "kept-pinned==1.0.0")
    assert cell.status == "fail"
    assert cell.explanation.startswith(
        "symbols fail: kept_pinned/kept_pinned_ops.abi3.so: built against torch 2.12"
    )
    assert "; blocked as well: kept-pinned 1.0.0: requires torch==2.12.0" in cell.explanation
    assert matrix.cell("torch==2.12.0", "kept-pinned==1.0.0").status in ("ok", "warn")


def test_the_loader_s_first_failure_is_the_first_reason_of_a_failing_set(built: TorchAbiStacks) -> None:
    # GIVEN a set that fails to load (at::legacy_helper is gone in 2.13.0) on a target its tags do not fit
    target = Target.parse(cuda="13.0", python=PY, platform="manylinux_2_17_x86_64")
    wheels = [
        wheel_facts_from_path(p, unread_sources=BUILT_IN_UNREAD)
        for p in (built.torch_new, built.kernels["removed-pinned"])
    ]
    analysis = analyze_set(wheels, target, builtin_profile("manylinux_2_28_x86_64"), stack=BUILT_IN_STACK)
    # THEN the failure the loader stops at comes first, before the tags and the pin
    first = analysis.failures()[0]
    assert first.evidence["loader_message"] == analysis.first_error.to_json()  # type: ignore[union-attr]
    assert {v.check for v in analysis.failures() if v.status in ("fail", "blocked")} >= {"tags", "requires"}


@pytest.mark.parametrize("command", ["inspect", "check"])
def test_torch_releases_are_read_only_for_a_wheel_that_needs_torch_s_libraries(
    built: TorchAbiStacks, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN torch==2.13.0 on an index, and two wheels: one needing no torch library, one linking torch
    unrelated, kernel = no_torch_wheel(tmp_path), built.kernels["kept-unpinned"]
    with IndexServer() as server:
        torch = server.add_wheel(built.torch_new)
        extra = [*TARGET[:-1], "--no-deps"] if command == "check" else []
        argv = ["--torch", "torch==2.13.0", "--index-url", server.index_url, *extra]
        # WHEN each is inspected (checked) with --torch torch==2.13.0
        seen = []
        for i, wheel in enumerate((unrelated, kernel)):
            main([command, str(wheel), *argv, "--cache-dir", str(tmp_path / f"cache{i}"), "--json"])
            seen.append(server.requests[torch.path] > 0)
    capsys.readouterr()
    # THEN the torch release is read for the kernel only
    assert seen == [False, True]


@pytest.mark.parametrize(
    ("spec", "minor"),
    [("==2.9.1", "2.9"), ("==2.9.*", "2.9"), ("~=2.9.0", "2.9"), (">=2.9,<2.10", None), ("~=2.9", None),
     (">=2.9", None), ("==2.9.1,!=2.9.0", "2.9")],
)  # fmt: skip
def test_a_torch_requirement_names_a_build_minor_only_when_it_admits_one_minor(
    spec: str, minor: str | None
) -> None:
    assert pinned_minor(SpecifierSet(spec)) == minor


@pytest.mark.parametrize(
    ("version", "minor"),
    [("2.8.3+cu12torch2.7cxx11abiTRUE", "2.7"), ("0.1.0+pt28cu128", "2.8"), ("0.1.0+pt210", "2.10"),
     ("0.1.0+cu128", None), ("0.1.0", None)],
)  # fmt: skip
def test_a_torch_version_in_a_local_label_is_read(
    built: TorchAbiStacks, version: str, minor: str | None
) -> None:
    facts = wheel_facts_from_path(built.kernels["kept-unpinned"], unread_sources=BUILT_IN_UNREAD)
    facts = replace(facts, metadata=replace(facts.metadata, version=version))
    found = recorded_build_torch(facts, None)
    assert (found.minor if found else None) == minor


@pytest.mark.parametrize(
    "name",
    [
        "_ZNKRSt7__cxx1115basic_stringbufIcSt11char_traitsIcESaIcEE3strEv",  # torchvision 0.29.1 _C_stable.so
        "_ZNOSt7__cxx1119basic_ostringstreamIcSt11char_traitsIcESaIcEE3strEv",
        "_ZNSt6vectorIiSaIiEE17_M_realloc_insertIJRKiEEEvN9__gnu_cxx17__normal_iteratorIPiS1_EEDpOT_",
        "_ZTVSt9exception",
        "_Znwm",
    ],
)
def test_a_std_name_over_no_torch_type_is_not_a_torch_import_even_when_torch_exports_it(name: str) -> None:
    # GIVEN a release whose libraries export the name (torch's libraries export std:: instantiations)
    release = TorchRelease("2.14.1", "torch", frozenset({name}))
    # THEN importing it does not tie a wheel to torch: libstdc++ provides it as well
    assert not is_torch_import(name, [release])
    assert is_torch_import("_ZNSt6vectorIN2at6TensorESaIS1_EE9push_backERKS1_", [release])
