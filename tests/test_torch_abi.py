"""The torch range a kernel wheel's bytes allow, against its declared pin; and `abiprobe diff` of two torches.

Fixtures (tests/support/torch_abi_stacks.py): two real fixture torch releases (2.12.0 -> 2.13.0: one
export removed, one parameter int -> unsigned int, one stable-shim function added) and kernel wheels built
against 2.12.0 whose pins agree, are too loose or too tight.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version
from support.held import BUILT_IN_UNREAD, HELD
from support.indexserver import IndexServer
from support.torch_abi_stacks import PLATFORM, TorchAbiStacks, torch_abi_stacks, torch_wheel
from support.venvs import make_venv, pip_install

from abiprobe.analyze.profiles import builtin_profile
from abiprobe.analyze.torch_abi import (
    WheelTorchRange,
    releases_of,
    shim_table,
    wheel_torch_range,
)
from abiprobe.binary.wheel import wheel_facts_from_path
from abiprobe.cli import main
from abiprobe.model.candidate import Candidate, IndexFile
from abiprobe.model.facts import WheelInfo
from abiprobe.model.stack import Stack, StackMember, default_stack
from abiprobe.model.target import Target
from abiprobe.solve.candidates import StackCandidate
from abiprobe.solve.evaluate import StaticEvaluator
from abiprobe.solve.matrix import Group, MatrixBuilder
from abiprobe.store.cache import Cache

BUILT_IN_STACK = default_stack()

SCHEMAS = Path(__file__).parent.parent / "abiprobe" / "schemas"
PY = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = ["--cuda", "13.0", "--python", PY, "--platform", "manylinux_2_28_x86_64"]
LEGACY = "_ZN2at13legacy_helperEi"
CHECK_INT = "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"
CHECK_UINT = "_ZN3c104cuda29c10_cuda_check_implementationEjPKcS2_ib"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> TorchAbiStacks:
    return torch_abi_stacks(tmp_path_factory.mktemp("torch-abi"))


def _range(built: TorchAbiStacks, key: str) -> WheelTorchRange:
    releases = releases_of(
        [
            wheel_facts_from_path(built.torch_old, unread_sources=BUILT_IN_UNREAD),
            wheel_facts_from_path(built.torch_new, unread_sources=BUILT_IN_UNREAD),
        ]
    )
    return wheel_torch_range(
        wheel_facts_from_path(built.kernels[key], unread_sources=BUILT_IN_UNREAD), releases
    )


def test_the_shipped_shim_table_parses_and_names_its_source() -> None:
    table = shim_table()
    assert table.source.endswith("shim_function_versions.txt") and len(table.source_commit) == 40
    assert table.read_through == "2.13" and table.first_enforced == "2.10"
    assert table.first_release("torch_library_def_with_tags") == "2.12"
    assert table.first_release("torch_from_blob") == "2.11"
    assert table.first_release("aoti_torch_abi_version") is None  # older than the table: before 2.10
    assert all(Version("2.10") <= Version(v) <= Version(table.read_through) for v in table.functions.values())


def test_unstable_kernel_pinned_to_the_release_it_was_built_on_agrees(built: TorchAbiStacks) -> None:
    r = _range(built, "removed-pinned")
    assert (r.kind, r.loads_with, r.declared, r.verdict) == ("unstable", ("2.12.0",), "==2.12.0", "agrees")
    (ext,) = [e for e in r.extensions if e.kind != "none"]
    assert ext.missing == (("2.13.0", LEGACY),)


def test_unstable_kernel_without_a_torch_requirement_is_too_loose(built: TorchAbiStacks) -> None:
    r = _range(built, "removed-unpinned")
    assert (r.verdict, r.declared) == ("too loose", None)
    assert r.reason == (
        "declares no torch requirement but imports torch's C++ ABI, "
        "which only torch 2.12.0 exports (of 2 known); built against torch 2.12 (its imports are all "
        "exported only by torch 2.12.0), it fails with any other torch minor"
    )


def test_floating_pin_admitting_a_release_with_a_changed_signature_is_too_loose(
    built: TorchAbiStacks,
) -> None:
    r = _range(built, "changed-floating")
    assert (r.kind, r.loads_with, r.verdict) == ("unstable", ("2.12.0",), "too loose")
    (ext,) = [e for e in r.extensions if e.kind != "none"]
    assert ext.missing == (("2.13.0", CHECK_INT),)


def test_stable_abi_kernel_pinned_exactly_is_too_tight(built: TorchAbiStacks) -> None:
    r = _range(built, "stable-pinned")
    assert (r.kind, r.floor, r.verdict) == ("stable", "2.12", "too tight")
    (ext,) = [e for e in r.extensions if e.kind != "none"]
    assert (ext.floor_symbol, ext.floor_from) == ("torch_library_def_with_tags", "table")
    assert r.loads_with == ("2.12.0", "2.13.0")
    assert (
        r.range_text()
        == "torch >= 2.12 (stable ABI floor); bytes load with torch 2.12.0, 2.13.0 (of 2.12.0, 2.13.0)"
    )


def test_stable_abi_kernel_floating_from_its_floor_agrees(built: TorchAbiStacks) -> None:
    assert _range(built, "stable-floating").verdict == "agrees"


def test_stable_abi_kernel_declaring_below_its_floor_is_too_loose(built: TorchAbiStacks) -> None:
    r = _range(built, "stable-low")
    assert r.verdict == "too loose"
    assert "the bytes need torch >= 2.12" in r.reason


def test_stable_floor_comes_from_the_newest_shim_function_it_imports(built: TorchAbiStacks) -> None:
    r = _range(built, "stable-new")
    assert (r.floor, r.loads_with, r.verdict) == ("2.13", ("2.13.0",), "agrees")


def test_check_names_the_torch_range_of_a_too_loose_kernel(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN torch 2.13.0 with a kernel built on 2.12.0 that declares no torch requirement
    argv = ["check", str(built.torch_new), str(built.kernels["removed-unpinned"]), *TARGET, "--json"]
    code = main([*argv, "--torch", str(built.torch_old)])
    doc = json.loads(capsys.readouterr().out)
    # THEN the symbol check fails (the fixture's extension, which no module of it imports, loads on first
    # use: a feature that will not load, bit 128) and the requires check says the pin is too loose
    (v,) = [v for v in doc["set_verdicts"] if v["explanation"].startswith("torch range")]
    assert (doc["checks"]["symbols"], code & 128) == ("fail", 128)
    assert (v["status"], v["subject"]) == ("warn", "removed-unpinned 1.0.0")
    assert v["evidence"]["torch_range"]["loads_with"] == ["2.12.0"]


def test_inspect_prints_and_documents_the_torch_range(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = str(built.kernels["stable-pinned"])
    torches = ["--torch", str(built.torch_old), "--torch", str(built.torch_new)]
    assert main(["inspect", wheel, *torches, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((SCHEMAS / "inspect.schema.json").read_text()))
    r = doc["sources"][0]["torch_range"]
    assert (r["kind"], r["floor"], r["declared"], r["verdict"]) == ("stable", "2.12", "==2.12.0", "too tight")
    assert main(["inspect", wheel, *torches]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "torch ABI: stable; range from its bytes: torch >= 2.12 (stable ABI floor)" in out
    assert "declared: torch==2.12.0; verdict too tight" in out


def test_check_judges_the_torch_release_the_target_would_install_not_this_host_s(
    built: TorchAbiStacks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN torch==2.12.0 on an index as two wheels, one for this host's Python and one for another; their
    # bytes differ (the other one lacks at::legacy_helper), so the verdict shows which one was judged
    other_py = "cp312" if PY != "cp312" else "cp311"
    for_target = torch_wheel(tmp_path / "t", "2.12.0", new=True, tag=f"{other_py}-{other_py}-{PLATFORM}")
    with IndexServer() as server:
        host_wheel = server.add_wheel(built.torch_old)
        target_wheel = server.add_wheel(for_target)
        # WHEN a kernel importing at::legacy_helper is checked for the other Python with --torch torch==2.12.0
        argv = ["check", str(built.kernels["removed-unpinned"]), "--torch", "torch==2.12.0", "--no-deps"]
        argv += ["--cuda", "13.0", "--python", other_py, "--platform", PLATFORM, "--json"]
        main([*argv, "--index-url", server.index_url, "--cache-dir", str(tmp_path / "cache")])
        # THEN the target's wheel was read, never the host's
        assert (server.requests[target_wheel.path] > 0, server.requests[host_wheel.path]) == (True, 0)
    doc = json.loads(capsys.readouterr().out)
    (v,) = [v for v in doc["set_verdicts"] if v["explanation"].startswith("torch range")]
    # AND the kernel's torch range is judged against it: no release of 2.12.0 it loads with
    assert v["evidence"]["torch_range"]["loads_with"] == []


def _diff(built: TorchAbiStacks, cache: Path, *extra: str) -> int:
    return main(["diff", str(built.torch_old), str(built.torch_new), "--cache-dir", str(cache), *extra])


def test_diff_reports_removed_changed_and_added_exports_and_broken_kernels(
    built: TorchAbiStacks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a cache that knows three kernels built on 2.12.0
    cache = Cache(tmp_path / "cache")
    for key in ("removed-pinned", "changed-floating", "stable-pinned"):
        cache.store_facts(wheel_facts_from_path(built.kernels[key], unread_sources=BUILT_IN_UNREAD))
    # WHEN diffing 2.12.0 against 2.13.0
    code = _diff(built, tmp_path / "cache", "--json")
    text = capsys.readouterr().out
    doc = json.loads(text)
    assert text.startswith('{\n "kind": "abiprobe-torch-diff",\n "schema_version": 1,')  # the one envelope
    jsonschema.validate(doc, json.loads((SCHEMAS / "torch-diff.schema.json").read_text()))
    # THEN the removal, the signature change and the added shim function are found
    assert [c["symbol"] for c in doc["removed"]] == [LEGACY]
    (changed,) = doc["changed"]
    assert (changed["symbol"], changed["replacement"], changed["namespace"]) == (
        CHECK_INT,
        CHECK_UINT,
        "c10::cuda",
    )
    assert changed["replacement_demangled"].startswith(
        "c10::cuda::c10_cuda_check_implementation(unsigned int"
    )
    assert [c["symbol"] for c in doc["added"]] == ["torch_new_stable_ivalue"]
    # AND the two unstable kernels break, the stable one does not; exit bits 4 (removed) | 8 (kernel)
    broken = {k["wheel"]: k["symbols"] for k in doc["kernels"]["broken"]}
    assert broken == {"removed-pinned 1.0.0": [LEGACY], "changed-floating 1.0.0": [CHECK_INT]}
    assert (code, doc["kernels"]["checked"]) == (12, 3)
    assert doc["headline"] == (
        "torch 2.12.0 -> 2.13.0: 1 removed, 1 signature changed, 1 added; "
        "2 of 3 known kernel wheels import a removed export"
    )


def test_diff_markdown_is_an_upgrade_ticket_section(
    built: TorchAbiStacks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _diff(built, tmp_path, "--format", "md") == 4
    out = capsys.readouterr().out
    assert out.startswith("## torch 2.12.0 → 2.13.0")
    assert "### Signature changed (1)" in out and "`at::legacy_helper(int)` (libtorch_cpu.so)" in out


def test_diff_of_a_wheel_without_torch_libraries_is_one_line_usage_error(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["diff", str(built.torch_old), str(built.kernels["stable-pinned"])])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no torch libraries in it" in err


def _candidate(role: str, path: Path) -> StackCandidate:
    facts = wheel_facts_from_path(path, unread_sources=BUILT_IN_UNREAD)
    name, version, build, tags = parse_wheel_filename(path.name)
    file = IndexFile(filename=path.name, url=path.as_uri(), hashes={"sha256": facts.sha256})
    return StackCandidate(role, Candidate(name, version, build, tags, file), 0, WheelInfo.of(facts))


def test_a_matrix_cell_explanation_names_the_torch_range(built: TorchAbiStacks) -> None:
    # GIVEN a matrix with a row per fixture torch and one kernel column built on 2.12.0, with no torch pin
    stack = Stack((StackMember("torch", (canonicalize_name("torch"),)), StackMember("kernel", ())))
    rows = [_candidate("torch", built.torch_old), _candidate("torch", built.torch_new)]
    kernel = _candidate("kernel", built.kernels["removed-unpinned"])
    target = Target.parse(cuda="13.0", python=PY, platform="manylinux_2_28_x86_64")
    evaluator = StaticEvaluator(
        target,
        builtin_profile("manylinux_2_28_x86_64"),
        lambda _g: (),
        torch_candidates=rows,
        stack=BUILT_IN_STACK,
        full=HELD,
    )
    groups = {"torch": tuple(Group("torch", r) for r in rows), "kernel": (Group("kernel", kernel),)}
    matrix = MatrixBuilder(stack, target, evaluator).build(groups)
    # THEN on the torch it was built on, the one problem the cell names is the too loose torch range
    cell = matrix.cell("torch==2.12.0", "removed-unpinned==1.0.0")
    assert cell.explanation.startswith(
        "requires warn: removed-unpinned 1.0.0: torch range too loose: declares no torch requirement"
    )
    assert "which only torch 2.12.0 exports (of 2 known)" in cell.explanation
    # AND on the release it cannot load with, the symbol failure leads and the torch range follows
    other = matrix.cell("torch==2.13.0", "removed-unpinned==1.0.0")
    assert other.explanation.startswith("symbols fail: ")
    assert other.explanation.endswith(
        "; removed-unpinned 1.0.0: torch range too loose (no torch requirement; bytes load with torch 2.12.0)"
    )


def test_check_prints_the_torch_range_of_each_kernel_even_when_it_agrees(
    built: TorchAbiStacks, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["check", str(built.torch_old), str(built.kernels["removed-pinned"]), *TARGET]
    assert main([*argv, "--torch", str(built.torch_new)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "torch range of removed-pinned 1.0.0: unstable ABI, torch 2.12.0 (of 2.12.0, 2.13.0); "
        "declared torch==2.12.0: agrees"
    ) in out


def test_diff_of_two_installed_environments(
    built: TorchAbiStacks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two environments, one with each fixture torch installed
    pythons = []
    for name, wheel in (("old", built.torch_old), ("new", built.torch_new)):
        py = make_venv(tmp_path / name, with_pip=False)
        pip_install(py, wheel)
        pythons.append(str(py))
    # WHEN their interpreters are diffed
    code = main(["diff", *pythons, "--no-kernels", "--json"])
    doc = json.loads(capsys.readouterr().out)
    # THEN the installed libraries are compared like the wheels
    assert (code, doc["old"]["version"], doc["new"]["version"]) == (4, "2.12.0", "2.13.0")
    assert [c["symbol"] for c in doc["changed"]] == [CHECK_INT]


def _stable_with(built: TorchAbiStacks, requires: list[str], drop: str | None = None) -> WheelTorchRange:
    """The stable-pinned kernel's facts with another Requires-Dist (and a release lacking ``drop``)."""
    releases = list(
        releases_of(
            [
                wheel_facts_from_path(built.torch_old, unread_sources=BUILT_IN_UNREAD),
                wheel_facts_from_path(built.torch_new, unread_sources=BUILT_IN_UNREAD),
            ]
        )
    )
    if drop is not None:
        releases[1] = replace(releases[1], exports=releases[1].exports - {drop})
    facts = wheel_facts_from_path(built.kernels["stable-pinned"], unread_sources=BUILT_IN_UNREAD)
    facts = replace(facts, metadata=replace(facts.metadata, requires_dist=tuple(requires)))
    return wheel_torch_range(facts, releases)


@pytest.mark.parametrize(
    ("requires", "verdict"),
    [(["torch>=2.12,<3"], "agrees"), (["torch>=2.12,<2.13"], "too tight"), (["torch~=2.12"], "agrees")],
)
def test_a_stable_abi_cap_is_too_tight_only_when_it_shuts_out_a_release_the_bytes_load_with(
    built: TorchAbiStacks, requires: list[str], verdict: str
) -> None:
    assert _stable_with(built, requires).verdict == verdict


def test_a_known_release_lacking_a_shim_function_overrules_the_table(built: TorchAbiStacks) -> None:
    # GIVEN 2.13.0's bytes without torch_library_impl (the table says 2.10 has it)
    r = _stable_with(built, ["torch>=2.12"], drop="torch_library_impl")
    # THEN a declaration admitting 2.13.0 is too loose, whatever the table promises
    assert (r.loads_with, r.verdict) == (("2.12.0",), "too loose")
    assert r.reason == "declares torch>=2.12, which admits torch 2.13.0; its bytes lack a shim function"


def test_inspect_with_no_torch_to_compare_says_so_in_words(
    built: TorchAbiStacks, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an unstable-ABI kernel inspected with no torch release given, and none in an empty cache
    kernel = str(built.kernels["removed-unpinned"])
    assert main(["inspect", kernel, "--cache-dir", str(tmp_path / "empty")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # THEN the range says there was nothing to compare with, not an empty list
    assert "range from its bytes: not known: no torch release to compare its imports with" in out, out
    assert "(of )" not in out and "(0 known: )" not in out
    assert "no torch release is known to compare them with" in out, out
