"""Real probes of small real wheels: each failure class, the driver stub, fork-server vs fresh processes."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.probe_wheels import ProbeWheels, build_probe_wheels
from support.tools import venv_tool
from support.wheelbuild import build_wheel

from abiprobe.probe import ProbeOptions, ProbeResult, ProbeSet, probe_sets
from abiprobe.probe.interpreters import InterpreterNotFoundError, find_interpreter
from abiprobe.probe.procs import ProcessRegistry
from abiprobe.probe.venv import Installer, create_venv, install_wheels, site_packages

CP311 = "cp311-cp311-manylinux_2_28_x86_64"


@pytest.fixture(scope="session")
def probe_wheels(tmp_path_factory: pytest.TempPathFactory) -> ProbeWheels:
    return build_probe_wheels(tmp_path_factory.mktemp("probe-wheels"))


def fixture_sets(w: ProbeWheels) -> list[ProbeSet]:
    pkgs = {
        "good": w.good,
        "missing": w.missing,
        "undefined": w.undefined,
        "symver": w.symver,
        "pyexc": w.pyexc,
        "segv": w.segv,
        "sleeper": w.sleeper,
        "driver": w.driver,
    }
    sets = [ProbeSet((w.base, wheel), ("base", name), name) for name, wheel in pkgs.items()]
    sets.insert(1, ProbeSet((w.base2, w.good), ("base", "good"), "good-on-base2", expected="ok"))
    return sets


@pytest.fixture(scope="session")
def fresh(probe_wheels: ProbeWheels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, ProbeResult]:
    """Every fixture set, one new process each, installed with pip by Python 3.12; plus a cp311 wheel."""
    temp = tmp_path_factory.mktemp("probe-fresh")
    other = build_wheel(temp.parent / "cp311", "other", "1.0", {"other/__init__.py": b""}, tag=CP311)
    sets = [*fixture_sets(probe_wheels), ProbeSet((other,), ("other",), "cp311")]
    options = ProbeOptions(python="3.12", timeout=2.5, fork="never", installer="pip", jobs=2, temp_dir=temp)
    results = probe_sets(sets, options)
    assert list(temp.iterdir()) == []
    return {r.label: r for r in results}


@pytest.fixture(scope="session")
def forked(probe_wheels: ProbeWheels) -> dict[str, ProbeResult]:
    """The same sets through a fork-server per layer (uv when available)."""
    options = ProbeOptions(timeout=2.5, fork="auto", jobs=2)
    return {r.label: r for r in probe_sets(fixture_sets(probe_wheels), options)}


def test_set_that_loads_reports_versions_and_loaded_objects(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["good"]
    assert (r.outcome, r.installer, r.mode, r.stubbed) == ("ok", "pip", "fresh", False)
    assert r.versions == (("base", "1.0"), ("good", "1.0"))
    assert r.loaded == ("base/lib/libbase.so", "good/_ext.abi3.so")
    assert dict(r.modules) == {"base": "base/__init__.py", "good": "good/__init__.py"}


def test_extension_built_against_old_base_fails_with_undefined_symbol(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["good-on-base2"]
    assert (r.outcome, r.module) == ("undefined_symbol", "good")
    assert r.message == "good/_ext.abi3.so: undefined symbol: base_v1"
    assert r.versions == (("base", "2.0"), ("good", "1.0"))
    assert r.disagrees and r.explanation().startswith("DISAGREES")


def test_missing_soname(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["missing"]
    assert (r.outcome, r.module, r.detail["soname"]) == ("missing_soname", "missing", "libabsent.so.12")


def test_undefined_mangled_symbol_is_demangled(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["undefined"]
    assert r.outcome == "undefined_symbol"
    assert (r.detail["symbol"], r.detail["demangled"]) == ("_ZN4base2v3Ei", "base::v3(int)")


def test_symbol_version_not_found(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["symver"]
    assert r.outcome == "symbol_version"
    assert (r.detail["version"], r.detail["required_by"]) == ("VER_2", "symver/_ext.abi3.so")


def test_python_exception_with_last_frame(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["pyexc"]
    assert (r.outcome, r.message) == ("python_exception", "RuntimeError: fixture refuses to import")
    assert r.detail["last_frame"] == "pyexc/__init__.py:2 in _setup"


def test_segfault_in_constructor_is_a_crash_naming_the_module(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["segv"]
    assert (r.outcome, r.module, r.detail["signal_name"]) == ("crash", "segv", "SIGSEGV")


def test_import_that_never_ends_times_out(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["sleeper"]
    assert (r.outcome, r.module) == ("timeout", "sleeper")
    assert 2.5 <= r.duration < 10


def test_driver_importer_loads_against_the_stub(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["driver"]
    assert (r.outcome, r.stubbed) == ("ok", True)
    assert "<driver stub>/libcuda.so.1" in r.loaded
    assert r.explanation() == "imports (driver stubbed)"


def test_fork_server_gives_the_same_outcomes_as_fresh_processes(
    fresh: dict[str, ProbeResult], forked: dict[str, ProbeResult]
) -> None:
    def summary(r: ProbeResult) -> tuple[object, ...]:
        return (r.outcome, r.module, r.message, r.versions, r.loaded, r.stubbed)

    fresh_ones = {k: summary(v) for k, v in fresh.items() if k != "cp311"}
    assert {k: summary(v) for k, v in forked.items()} == fresh_ones
    assert {k: r.mode for k, r in forked.items() if r.mode != "fork"} == {"good-on-base2": "fresh"}


def test_driver_stub_can_be_refused(probe_wheels: ProbeWheels, tmp_path: Path) -> None:
    options = ProbeOptions(timeout=10, stub_driver="never", temp_dir=tmp_path)
    [r] = probe_sets([ProbeSet((probe_wheels.driver,), ("driver",), "nostub")], options)
    assert (r.outcome, r.detail["soname"], r.stubbed) == ("missing_soname", "libcuda.so.1", False)


def test_wheel_for_another_python_fails_to_install(fresh: dict[str, ProbeResult]) -> None:
    r = fresh["cp311"]
    assert (r.outcome, r.python) == ("install_failed", "3.12")
    assert r.message.startswith("pip install failed")


def test_unknown_python_version_is_a_clear_error() -> None:
    with pytest.raises(InterpreterNotFoundError, match=r"no Python 3\.99 found"):
        find_interpreter("3.99")


def test_uv_installs_exactly_the_given_wheels_offline(probe_wheels: ProbeWheels, tmp_path: Path) -> None:
    procs = ProcessRegistry()
    py = create_venv(procs, find_interpreter(None).path, tmp_path / "venv", tmp_path)
    uv = Installer("uv", (venv_tool("uv"),))
    install_wheels(procs, uv, py, [probe_wheels.base, probe_wheels.good], tmp_path)
    installed = sorted(
        p.name for p in site_packages(tmp_path / "venv").iterdir() if p.name.endswith("dist-info")
    )
    assert installed == ["base-1.0.dist-info", "good-1.0.dist-info"]
