"""Snapshot a real venv, print its restore plan, run the plan in a fresh venv and compare the two."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.indexserver import IndexServer
from support.schemas import assert_valid
from support.solve_stacks import solve_stack
from support.venvs import isolated_env, make_venv, sh
from support.wheelbuild import build_wheel

from abiprobe.cli import main
from abiprobe.host.snapshot import load_snapshot, take_snapshot
from abiprobe.model.snapshot import Snapshot, content_fingerprint, parse_direct_url
from abiprobe.report.restore import compare, render_script, restore_plan

SCHEMA = Path(__file__).parent.parent / "abiprobe" / "schemas" / "snapshot.schema.json"


@dataclass(frozen=True)
class Restored:
    wheelhouse: Path
    kernel_wheel: Path
    snapshot_file: Path
    snapshot: Snapshot
    script: str
    before: Snapshot
    after: Snapshot


@pytest.fixture(scope="module")
def restored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restored]:
    root = tmp_path_factory.mktemp("snapshot")
    stack = solve_stack(tmp_path_factory.mktemp("solve-stack"))
    house, elsewhere = root / "wheelhouse", root / "elsewhere"
    house.mkdir()
    kernel = Path(shutil.copy(stack.wheels["k040"], house))
    plain = build_wheel(
        house,
        "plainpkg",
        "1.0",
        {
            "plainpkg/__init__.py": b"VALUE = 1\n",
            "plainpkg-1.0.data/scripts/plain-tool": b"#!python\nprint('tool')\n",
        },
        tag="py3-none-any",
    )
    secret = build_wheel(elsewhere, "secretpkg", "2.0", {"secretpkg/__init__.py": b""}, tag="py3-none-any")
    direct = build_wheel(elsewhere, "directpkg", "1.0", {"directpkg/__init__.py": b""}, tag="py3-none-any")
    with IndexServer() as server:
        for w in (kernel, plain, secret):
            server.add_wheel(w)
        py1 = make_venv(root / "before")
        sh(
            py1,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--index-url",
            server.index_url,
            "sglang-kernel==0.4.0",
            "plainpkg",
            "secretpkg",
        )
        sh(py1, "-m", "pip", "install", "--no-deps", direct)
        snap_file = root / "before.json"
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PIP_INDEX_URL", server.index_url)
            args = ["snapshot", "--python", str(py1), "--wheels-dir", str(house), "-o", str(snap_file)]
            assert main(args) == 0
        snap = load_snapshot(snap_file)
        script = render_script(restore_plan(snap))
        py2 = make_venv(root / "after")
        (root / "restore.sh").write_text(script)
        sh("bash", root / "restore.sh", env=isolated_env(PYTHON=str(py2)))
        yield Restored(
            house,
            kernel,
            snap_file,
            snap,
            script,
            take_snapshot(str(py1), [house]),
            take_snapshot(str(py2), [house]),
        )


def dist(snap: Snapshot, name: str) -> Any:
    found = snap.dist(name)
    assert found is not None, name
    return found


def test_snapshot_validates_against_its_schema(restored: Restored) -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(json.loads(restored.snapshot_file.read_text()), schema)


def test_snapshot_records_the_wheel_sha256_found_in_the_wheels_dir(restored: Restored) -> None:
    # GIVEN the kernel installed from an index and its wheel file in --wheels-dir
    k = dist(restored.snapshot, "sglang-kernel")
    # THEN the wheel's sha256 is recovered: the file's RECORD matches what is installed
    assert (k.version, k.source.kind, k.installer) == ("0.4.0", "index", "pip")
    assert k.wheel.sha256 == hashlib.sha256(restored.kernel_wheel.read_bytes()).hexdigest()
    assert k.wheel.filename == restored.kernel_wheel.name


def test_snapshot_fingerprints_the_extension_module(restored: Restored) -> None:
    k = dist(restored.snapshot, "sglang-kernel")
    (ext,) = k.extensions
    installed = Path(k.location) / "sgl_kernel" / "common_ops.abi3.so"
    assert ext.path == "sgl_kernel/common_ops.abi3.so"
    assert ext.sha256 == hashlib.sha256(installed.read_bytes()).hexdigest()
    assert ext.cuda_majors == (13,)
    assert "libcudart.so.13" in ext.needed
    assert ext.gpu_code == ("sm_120",)


def test_scripts_rewritten_by_the_installer_do_not_change_the_fingerprint(restored: Restored) -> None:
    # GIVEN a wheel whose .data/scripts file pip rewrites on install: its wheel is still recognised
    assert dist(restored.snapshot, "plainpkg").wheel is not None


def test_wheel_outside_the_wheels_dir_has_an_unknown_hash(restored: Restored) -> None:
    s = dist(restored.snapshot, "secretpkg")
    assert s.wheel is None
    assert (
        f"# secretpkg 2.0: wheel sha256 unknown (wheel file not found); content fingerprint "
        f"{s.content_sha256}\nsecretpkg==2.0\n" in restored.script
    )


def test_direct_file_install_records_its_url(restored: Restored) -> None:
    d = dist(restored.snapshot, "directpkg")
    assert (d.source.kind, d.source.url.rsplit("/", 1)[-1]) == ("file", "directpkg-1.0-py3-none-any.whl")
    assert f"directpkg @ {d.source.url}" in restored.script


def test_snapshot_records_the_configured_index(restored: Restored) -> None:
    assert restored.snapshot.index_origin == "PIP_INDEX_URL"
    assert f"--index-url {restored.snapshot.index_url}" in restored.script


def test_restore_plan_pins_known_wheels_by_hash(restored: Restored) -> None:
    sha = hashlib.sha256(restored.kernel_wheel.read_bytes()).hexdigest()
    assert f"sglang-kernel==0.4.0 --hash=sha256:{sha}\n" in restored.script
    assert "--require-hashes --index-url" in restored.script


def test_restore_plan_recreates_the_environment_in_a_fresh_venv(restored: Restored) -> None:
    # GIVEN the plan run in a fresh venv
    # THEN the same distributions, versions and installed content, and the same wheel hashes
    assert compare(restored.before, restored.after) == []
    names = sorted((d.name, d.version) for d in restored.before.dists)
    assert sorted((d.name, d.version) for d in restored.after.dists) == names
    for d in restored.before.dists:
        assert dist(restored.after, d.name).wheel == d.wheel
        assert dist(restored.after, d.name).extensions == d.extensions


def test_verify_passes_for_the_restored_venv(restored: Restored, capsys: pytest.CaptureFixture[str]) -> None:
    after_python = restored.after.executable
    assert main(["restore-plan", str(restored.snapshot_file), "--verify", after_python]) == 0
    assert capsys.readouterr().out.strip().endswith("matches the snapshot")


def test_restore_plan_json_and_its_verification_follow_their_schema(
    restored: Restored, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["restore-plan", str(restored.snapshot_file), "--json"]) == 0
    plan = assert_valid(json.loads(capsys.readouterr().out), "restore-plan")
    assert plan["hashed"] or plan["unhashed"]
    argv = ["restore-plan", str(restored.snapshot_file), "--verify", restored.after.executable, "--json"]
    assert main(argv) == 0
    assert assert_valid(json.loads(capsys.readouterr().out), "restore-plan") == {
        "kind": "abiprobe-restore-verification",
        "schema_version": 1,
        "matches": True,
        "problems": [],
    }


def test_compare_names_a_missing_and_a_changed_distribution(restored: Restored) -> None:
    before = restored.before
    kernel = dist(before, "sglang-kernel")
    changed = dataclasses.replace(dist(before, "plainpkg"), content_sha256="0" * 64)
    others = tuple(d for d in before.dists if d.key not in ("sglang-kernel", "plainpkg"))
    after = dataclasses.replace(before, dists=(*others, changed))
    assert compare(before, after) == [
        "plainpkg 1.0: installed files differ from the snapshot",
        f"{kernel.name} 0.4.0: missing",
    ]


def test_plan_against_an_upgraded_env_removes_what_was_added(restored: Restored) -> None:
    extra = dataclasses.replace(dist(restored.before, "plainpkg"), name="newcomer")
    current = dataclasses.replace(restored.before, dists=(*restored.before.dists, extra))
    plan = restore_plan(restored.snapshot, current)
    assert plan.remove == ("newcomer",)
    assert '"$PYTHON" -m pip uninstall -y newcomer' in render_script(plan)


def test_uv_commands_run_when_uv_is_chosen(restored: Restored) -> None:
    text = render_script(restore_plan(restored.snapshot), "uv")
    assert 'uv pip install --python "$PYTHON" --no-deps --require-hashes' in text
    assert '#   "$PYTHON" -m pip install' in text


def test_direct_url_with_an_archive_hash_is_a_hashed_url_source() -> None:
    text = json.dumps(
        {"url": "https://example.test/x-1.0-py3-none-any.whl", "archive_info": {"hash": "sha256=" + "a" * 64}}
    )
    src = parse_direct_url(text)
    assert (src.kind, src.sha256) == ("url", "a" * 64)


def test_direct_url_of_an_editable_directory() -> None:
    src = parse_direct_url(json.dumps({"url": "file:///src/x", "dir_info": {"editable": True}}))
    assert (src.kind, src.url) == ("editable", "file:///src/x")


def test_fingerprint_ignores_bytecode_and_installer_files() -> None:
    rows = [("a/__init__.py", "sha256=x"), ("a-1.dist-info/METADATA", "sha256=m")]
    noise = [
        ("a/__pycache__/__init__.cpython-312.pyc", "sha256=p"),
        ("a-1.dist-info/INSTALLER", "sha256=i"),
        ("../../bin/tool", "sha256=t"),
    ]
    assert content_fingerprint(rows + noise) == content_fingerprint(rows)
