"""Kept layers (``--keep-layers``): a second lone probe of the same wheels reuses the installed layer, a
layer that was written into is rebuilt, another wheel gets another layer, and the store keeps its bound.

Real wheels, real venvs, real interpreters (the installer the host has)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.probe import ProbeOptions, ProbeResult, ProbeSet, interpreters, probe_sets
from abiprobe.probe.interpreters import find_interpreter, query_version
from abiprobe.probe.layers import LayerStore


def _wheel(out: Path, value: int) -> Path:
    files = {"lone/__init__.py": b"from lone import core\nVALUE = core.VALUE\n",
             "lone/core.py": f"VALUE = {value}\n".encode()}  # fmt: skip
    return build_wheel(out / str(value), "lone", "1.0", files, tag="py3-none-any")


def _probe(wheel: Path, temp: Path, *, bound: int | None = None) -> ProbeResult:
    options = ProbeOptions(python="3.12", timeout=30, jobs=1, temp_dir=temp, keep_layers=True,
                           layer_cache_bytes=bound)  # fmt: skip
    (result,) = probe_sets([ProbeSet((wheel,), ("lone",), "lone")], options)
    assert list(temp.iterdir()) == [], "the probe left files behind"
    return result


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LayerStore:
    monkeypatch.setenv("ABIPROBE_LOCAL_DIR", str(tmp_path / "local"))
    (tmp_path / "temp").mkdir()
    return LayerStore(tmp_path / "local" / "layers")


def test_a_kept_layer_is_reused_then_rebuilt_once_written_into(tmp_path: Path, store: LayerStore) -> None:
    wheel = _wheel(tmp_path / "w", 1)
    temp = tmp_path / "temp"
    # GIVEN a lone probe with --keep-layers: the layer is built and kept
    first = _probe(wheel, temp)
    assert (first.outcome, first.detail["layer_reused"]) == ("ok", False)
    (kept,) = store.layers()
    # WHEN the same wheel is probed again, THEN the kept layer is used, not installed again
    second = _probe(wheel, temp)
    assert (second.outcome, second.detail["layer_reused"]) == ("ok", True)
    assert second.modules == first.modules
    # WHEN a file of the kept layer is replaced (as a package writing into site-packages would; a new
    # file, not the installed inode, which the installer may share with its cache)
    (core,) = (store.root / kept[0] / "venv").rglob("lone/core.py")
    core.unlink()
    core.write_text("VALUE = 2\nraise ImportError('tampered layer')\n")
    third = _probe(wheel, temp)
    # THEN the layer is not trusted: it is built afresh from the wheel and imports as the wheel says
    assert (third.outcome, third.detail["layer_reused"]) == ("ok", False)
    assert "tampered" not in core.read_text()
    # AND a different wheel (another sha256) gets a layer of its own, beside the first
    other = _probe(_wheel(tmp_path / "w", 3), temp)
    assert (other.outcome, other.detail["layer_reused"]) == ("ok", False)
    assert len(store.layers()) == 2


def test_the_store_keeps_its_bound_and_removes_the_least_recently_used(
    tmp_path: Path, store: LayerStore
) -> None:
    temp = tmp_path / "temp"
    a, b = _wheel(tmp_path / "w", 1), _wheel(tmp_path / "w", 2)
    _probe(a, temp)
    _probe(b, temp)
    sizes = {key: size for key, size, _ in store.layers()}
    assert len(sizes) == 2 and all(s > 0 for s in sizes.values())
    newest = store.layers()[0][0]
    # WHEN a run keeps the store to one layer's size, THEN only the most recently used layer stays
    again = _probe(b, temp, bound=max(sizes.values()))
    assert again.detail["layer_reused"] is True
    assert [k for k, _, _ in store.layers()] == [newest]
    # AND a bound of 0 keeps nothing once the run is over
    _probe(a, temp, bound=0)
    assert store.layers() == []
    assert not [p for p in store.root.iterdir() if p.is_dir()]


def test_probe_cli_keep_layers_and_a_bad_size(
    tmp_path: Path, store: LayerStore, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _wheel(tmp_path / "w", 1)
    argv = ["probe", str(wheel), "--python", "3.12", "--keep-layers", "--json"]
    reused = []
    for _ in range(2):
        assert main(argv) == 0
        reused.append(json.loads(capsys.readouterr().out)["results"][0]["detail"]["layer_reused"])
    assert reused == [False, True]
    assert main([*argv, "--layer-cache-size", "lots"]) == 2
    err = capsys.readouterr().err
    assert "--layer-cache-size 'lots'" in err and "Traceback" not in err


def test_an_interpreters_version_is_remembered_for_a_binary_and_asked_of_a_script_each_time(
    tmp_path: Path, store: LayerStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a real interpreter binary (copied, so it is new to the memo) and a launcher script
    real = find_interpreter("3.12").path
    binary = tmp_path / "bin" / "python3.12"
    binary.parent.mkdir()
    shutil.copy2(os.path.realpath(real), binary)
    script = tmp_path / "bin" / "launcher"
    script.write_text(f'#!/bin/sh\nexec "${{LAUNCH:-{binary}}}" "$@"\n')
    script.chmod(0o755)
    assert query_version(binary) == (3, 12)
    assert query_version(script) == (3, 12)
    # WHEN what the script launches changes, THEN it is asked again; the binary's answer is remembered
    monkeypatch.setenv("LAUNCH", str(find_interpreter("3.11").path))
    assert query_version(script) == (3, 11)
    assert list((tmp_path / "local" / "interpreters").iterdir()), "nothing was remembered"
    # AND a changed binary (another mtime) is a new binary: asked again, not answered from the memo
    os.utime(binary, ns=(1, 1))
    calls: list[Path] = []
    real_ask = interpreters._ask_version
    monkeypatch.setattr(interpreters, "_ask_version", lambda p: calls.append(p) or real_ask(p))
    assert query_version(binary) == (3, 12)
    assert query_version(binary) == (3, 12)
    assert calls == [binary]
