"""The layer bytecode store: a second probe of a layer reuses what the first compiled, and only the layer's.

Real wheels, real venvs, real interpreters: the fork server compiles the shared package into the layer's
pycache prefix, the store keeps it, the next run links it back in before anything starts.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.wheelbuild import build_wheel

from abiprobe.probe import ProbeOptions, ProbeSet, probe_sets
from abiprobe.probe.bytecode import BytecodeStore
from abiprobe.probe.interpreters import find_interpreter
from abiprobe.store.localstate import local_sha256


def _wheels(out: Path) -> tuple[Path, Path, Path]:
    base = build_wheel(out, "shared", "1.0", {
        "shared/__init__.py": b"from shared import core\nVALUE = core.VALUE\n",
        "shared/core.py": b"VALUE = 42\n",
        "shared/late.py": b"LATE = 1\n",  # imported only by set a's child, never by the layer's parent
    })  # fmt: skip
    a = build_wheel(
        out, "seta", "1.0", {"seta/__init__.py": b"import shared.late\nfrom shared import VALUE\n"}
    )
    b = build_wheel(out, "setb", "1.0", {"setb/__init__.py": b"from shared import VALUE\n"})
    return base, a, b


def _probe(base: Path, a: Path, b: Path, temp: Path) -> dict[str, dict[str, object]]:
    sets = [ProbeSet((base, a), ("shared", "seta"), "a"), ProbeSet((base, b), ("shared", "setb"), "b")]
    options = ProbeOptions(python="3.12", timeout=20, fork="always", jobs=1, temp_dir=temp)
    results = probe_sets(sets, options)
    assert list(temp.iterdir()) == [], "the probe left files behind"
    return {
        r.label: {"outcome": r.outcome, "mode": r.mode, "modules": r.modules, **r.detail} for r in results
    }


@pytest.fixture
def layer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """The fixture wheels, a private bytecode store, and two empty temp parents t1/ and t2/."""
    monkeypatch.setenv("ABIPROBE_LOCAL_DIR", str(tmp_path / "local"))
    (tmp_path / "t1").mkdir()
    (tmp_path / "t2").mkdir()
    return _wheels(tmp_path / "wheels")


def test_second_probe_of_a_layer_reuses_its_bytecode_and_never_a_sets_own(
    tmp_path: Path, layer: tuple[Path, Path, Path]
) -> None:
    base, a, b = layer
    # GIVEN a first probe of two sets sharing the layer `shared`, with an empty store
    first = _probe(base, a, b, tmp_path / "t1")
    assert {k: (v["outcome"], v["mode"], v["bytecode_files_restored"]) for k, v in first.items()} == {
        "a": ("ok", "fork", 0),
        "b": ("ok", "fork", 0),
    }
    # THEN the store holds the shared package's bytecode, compiled by the layer's parent only:
    # nothing of the sets' own packages, nothing a set's child imported on its own
    saved = [p.relative_to(tmp_path / "local" / "bytecode") for p in (tmp_path / "local").rglob("*.pyc")]
    site_files = sorted(p.parts[-2] + "/" + p.name for p in saved if p.parts[1] == "site")
    assert site_files == ["shared/__init__.cpython-312.pyc", "shared/core.cpython-312.pyc"]
    assert not [p for p in saved if "seta" in str(p) or "setb" in str(p) or "late" in p.name]
    # WHEN the same sets are probed again
    second = _probe(base, a, b, tmp_path / "t2")
    # THEN the bytecode came back in and the results are the same
    assert all(v["bytecode_files_restored"] >= 2 for v in second.values())
    for label in ("a", "b"):
        assert (second[label]["outcome"], second[label]["modules"]) == (
            first[label]["outcome"],
            first[label]["modules"],
        )


def test_stale_saved_bytecode_is_recompiled_not_trusted(
    tmp_path: Path, layer: tuple[Path, Path, Path]
) -> None:
    # GIVEN a store whose bytecode for shared/core.py claims VALUE = 7 but was compiled from other source
    base, a, b = layer
    _probe(base, a, b, tmp_path / "t1")
    (pyc,) = (tmp_path / "local").rglob("core.cpython-312.pyc")
    other = tmp_path / "other_core.py"
    other.write_text("VALUE = 7\n")
    py312 = find_interpreter("3.12", []).path
    compile_it = f"import py_compile; py_compile.compile({str(other)!r}, cfile={str(pyc)!r}, doraise=True)"
    subprocess.run([str(py312), "-c", compile_it], check=True)
    # WHEN probed again, with a set that checks the value
    check = build_wheel(tmp_path / "wheels", "setc", "1.0", {
        "setc/__init__.py": b"from shared import VALUE\nassert VALUE == 42, VALUE\n",
    })  # fmt: skip
    sets = [ProbeSet((base, check), ("shared", "setc"), "c"), ProbeSet((base, b), ("shared", "setb"), "b")]
    results = probe_sets(
        sets, ProbeOptions(python="3.12", timeout=20, fork="always", jobs=1, temp_dir=tmp_path / "t2")
    )
    # THEN the stale file was not used: the real source's value was imported
    assert [(r.label, r.outcome) for r in results] == [("c", "ok"), ("b", "ok")]


def test_local_sha256_hashes_once_and_again_after_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import abiprobe.store.localstate as ls

    f = tmp_path / "x.whl"
    f.write_bytes(b"one")
    calls: list[Path] = []
    real = ls.hash_file
    monkeypatch.setattr(ls, "hash_file", lambda p: calls.append(p) or real(p))
    first = local_sha256(f, tmp_path / "state")
    assert local_sha256(f, tmp_path / "state") == first
    assert len(calls) == 1, "an unchanged file was hashed again"
    f.write_bytes(b"two")
    assert local_sha256(f, tmp_path / "state") != first
    assert len(calls) == 2


def test_store_keeps_a_bounded_number_of_layers(tmp_path: Path) -> None:
    store = BytecodeStore(tmp_path / "store")
    prefix, site, temp = tmp_path / "pyc", tmp_path / "venv" / "site", tmp_path / "temp"
    target = prefix / str(site).lstrip("/") / "m.cpython-312.pyc"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"x")
    for n in range(12):
        assert store.save(f"k{n:02d}", prefix, site, temp, {}) == 1
    assert len(list((tmp_path / "store").iterdir())) <= 8


def test_single_set_probes_reuse_bytecode_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ABIPROBE_LOCAL_DIR", str(tmp_path / "local"))
    base, a, _ = _wheels(tmp_path / "wheels")
    restored = []
    for n in range(2):
        temp = tmp_path / f"t{n}"
        temp.mkdir()
        options = ProbeOptions(python="3.12", timeout=20, jobs=1, temp_dir=temp)
        (r,) = probe_sets([ProbeSet((base, a), ("shared", "seta"), "a")], options)
        assert (r.outcome, r.mode) == ("ok", "fresh")
        restored.append(r.detail["bytecode_files_restored"])
    assert restored[0] == 0 and restored[1] >= 3  # shared/__init__, core, late
