"""``check --installed REQ`` / ``probe --installed REQ``: the installer's own dry run says what changes
in a real venv, the environment it leaves is judged, and the installed distributions the change breaks
are named; each answer is compared with a real install into a copy of the venv and a real import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.cbuild import build_shared
from support.indexserver import IndexServer
from support.probe_wheels import TAG, build_extension
from support.venvs import make_venv, pip_install
from support.wheelbuild import build_wheel

from abiprobe.cli import main

SCHEMAS = Path(__file__).parents[1] / "abiprobe/schemas"
EXT = "_ext.abi3.so"


@dataclass(frozen=True)
class Env:
    python: Path
    server: IndexServer
    links: Path  # every fixture wheel in one folder, as a find-links source


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """A venv with ``basex 1.0`` (``libbasex.so``: ``basex_v1``) and ``plugx 1.0``, whose extension
    needs ``basex_v1`` through ``$ORIGIN/../basex/lib``; the index also has ``basex 1.1`` (adds
    ``basex_v2``) and ``basex 2.0`` (``basex_v2`` only), as a torch upgrade drops what a plugin used."""
    root = tmp_path_factory.mktemp("plan")
    work, out = root / "build", root / "wheels"
    libs = {
        "1.0": "int basex_v1(int x) { return x + 1; }\n",
        "1.1": "int basex_v1(int x) { return x + 1; }\nint basex_v2(int x) { return x + 2; }\n",
        "2.0": "int basex_v2(int x) { return x + 2; }\n",
    }
    wheels = []
    for version, source in libs.items():
        lib = build_shared(work / version, "libbasex.so", source, soname="libbasex.so")
        files = {"basex/__init__.py": b"", "basex/lib/libbasex.so": lib}
        wheels.append(build_wheel(out / version, "basex", version, files, tag=TAG))
    v1 = work / "1.0" / "libbasex.so"
    calls = "extern int basex_v1(int); int use(void) { return basex_v1(1); }"
    ext = build_extension(work / "plugx", EXT, "plugx", calls, link=[v1], rpath=["$ORIGIN/../basex/lib"])
    plug = {"plugx/__init__.py": b"from . import _ext\n", f"plugx/{EXT}": ext}
    wheels.append(build_wheel(out, "plugx", "1.0", plug, tag=TAG, requires_dist=["basex>=1"]))
    links = root / "links"
    links.mkdir()
    for w in wheels:
        shutil.copy(w, links / w.name)
    with IndexServer() as server:
        for w in wheels:
            server.add_wheel(w)
        python = make_venv(root / "venv", with_pip=False)
        pip_install(python, "--index-url", server.index_url, "basex==1.0", "plugx==1.0")
        yield Env(python, server, links)


@pytest.fixture(autouse=True)
def no_host_installer_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The installer's dry run reads only the test's index, not this host's pip or uv settings."""
    for key in [k for k in os.environ if k.startswith(("PIP_", "UV_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)


def real_import(env: Env, tmp: Path, requirement: str) -> subprocess.CompletedProcess[str]:
    """Install ``requirement`` for real into a copy of the venv, then import plugx there."""
    copy = tmp / "copy"
    shutil.copytree(env.python.parent.parent, copy, symlinks=True)
    python = copy / "bin" / "python"
    pip_install(python, "--index-url", env.server.index_url, requirement)
    return subprocess.run([str(python), "-c", "import plugx"], capture_output=True, text=True)


def check_json(
    env: Env, tmp: Path, capsys: pytest.CaptureFixture[str], req: str
) -> tuple[int, dict[str, Any]]:
    argv = ["check", "--installed", req, "--python", str(env.python), "--index-url", env.server.index_url]
    rc = main([*argv, "--installer", "pip", "--cache-dir", str(tmp / "cache"), "--json"])
    captured = capsys.readouterr()
    assert captured.out, captured.err
    doc: dict[str, Any] = json.loads(captured.out)
    jsonschema.validate(doc, json.loads((SCHEMAS / "check.schema.json").read_text()))
    return rc, doc


def test_an_upgrade_that_drops_a_symbol_names_the_installed_distribution_it_breaks(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the venv with basex 1.0 and plugx 1.0
    # WHEN the check asks what installing basex==2.0 there would do
    rc, doc = check_json(env, tmp_path, capsys, "basex==2.0")
    # THEN pip's plan replaces basex 1.0 with 2.0, plugx 1.0 is named broken, the undefined symbol fails
    plan = doc["plan"]
    assert [(w["name"], w["version"]) for w in plan["install"]] == [("basex", "2.0")]
    assert plan["remove"] == [{"name": "basex", "version": "1.0"}]
    assert [b["distribution"] for b in doc["plan"]["broken"]] == ["plugx 1.0"]
    assert rc & 8
    # AND a real install into a copy of the venv fails to import plugx, on that symbol
    real = real_import(env, tmp_path, "basex==2.0")
    assert real.returncode != 0 and "basex_v1" in real.stderr


def test_a_compatible_upgrade_breaks_nothing(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same venv
    # WHEN installing basex==1.1 (which keeps basex_v1) is checked
    rc, doc = check_json(env, tmp_path, capsys, "basex==1.1")
    # THEN the plan replaces basex, nothing is broken, the check passes
    assert [(w["name"], w["version"]) for w in doc["plan"]["install"]] == [("basex", "1.1")]
    assert (rc, doc["plan"]["broken"]) == (0, [])
    # AND a real install into a copy of the venv imports plugx
    assert real_import(env, tmp_path, "basex==1.1").returncode == 0


def test_text_output_prints_the_installer_s_plan_beside_the_verdict(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same venv
    # WHEN the check runs with text output
    argv = ["check", "--installed", "basex==2.0", "--python", str(env.python), "--installer", "pip"]
    rc = main([*argv, "--index-url", env.server.index_url, "--cache-dir", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    # THEN the plan's removals, additions and the broken distribution are listed
    assert "  - basex 1.0" in out and "  + basex 2.0" in out
    assert "plugx 1.0: ok -> fail" in out
    assert rc & 8


def test_a_requirement_the_installer_cannot_satisfy_is_one_line(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same venv and an index without basex 9
    # WHEN installing basex==9.0 there is checked
    argv = ["check", "--installed", "basex==9.0", "--python", str(env.python), "--installer", "pip"]
    rc = main([*argv, "--index-url", env.server.index_url, "--cache-dir", str(tmp_path / "cache")])
    captured = capsys.readouterr()
    # THEN one line says pip would not install it, with pip's reason, and no traceback
    assert rc == 1
    assert "pip would not install basex==9.0 here" in captured.err
    assert "Traceback" not in captured.err


def test_probe_installed_req_imports_the_planned_environment(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same venv
    # WHEN probe --installed basex==2.0 imports the environment pip's plan leaves
    argv = ["probe", "--installed", "basex==2.0", "--python", str(env.python), "--installer", "pip"]
    rc = main([*argv, "--index-url", env.server.index_url, "--wheels-dir", str(tmp_path / "w"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((SCHEMAS / "probe.schema.json").read_text()))
    # THEN plugx, which requires basex, is imported too and fails on the dropped symbol, as for real
    [result] = doc["results"]
    assert result["outcome"] == "undefined_symbol" and "basex_v1" in str(result["message"]), json.dumps(
        result
    )
    assert [w["name"] for w in doc["plan"]["install"]] == ["basex"]
    assert rc == 1


def test_an_offline_dry_run_from_a_wheel_folder_gives_the_same_answer(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same venv and the wheels in a folder, no index at all
    # WHEN the check hands --find-links DIR --no-index --no-deps to pip's dry run
    argv = [
        "check",
        "--installed",
        "basex==2.0",
        "--no-deps",
        "--python",
        str(env.python),
        "--installer",
        "pip",
    ]
    rc = main(
        [*argv, "--find-links", str(env.links), "--no-index", "--json", "--cache-dir", str(tmp_path / "c")]
    )
    doc = json.loads(capsys.readouterr().out)
    # THEN the plan takes the folder's wheel, read as a local wheel, and plugx 1.0 is named broken
    assert [w["url"] for w in doc["plan"]["install"]] == [(env.links / f"basex-2.0-{TAG}.whl").as_uri()]
    assert "--no-deps" in doc["plan"]["command"] and "--no-index" in doc["plan"]["command"]
    assert [b["distribution"] for b in doc["plan"]["broken"]] == ["plugx 1.0"]
    assert rc & 8


def test_uv_s_dry_run_gives_the_same_plan_and_verdict(
    env: Env, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same venv, with uv as the user's installer and the wheels in a folder
    # WHEN the check asks uv's dry run (which names versions, not files) about basex==2.0
    argv = ["check", "--installed", "basex==2.0", "--python", str(env.python), "--installer", "uv"]
    rc = main(
        [*argv, "--find-links", str(env.links), "--no-index", "--json", "--cache-dir", str(tmp_path / "c")]
    )
    doc = json.loads(capsys.readouterr().out)
    # THEN uv's '- basex==1.0' / '+ basex==2.0' are read, the wheel is found in the folder, plugx is broken
    assert doc["plan"]["installer"] == "uv"
    assert doc["plan"]["remove"] == [{"name": "basex", "version": "1.0"}]
    assert [r["filename"] for r in doc["plan"]["read"]] == [f"basex-2.0-{TAG}.whl"]
    assert [b["distribution"] for b in doc["plan"]["broken"]] == ["plugx 1.0"]
    assert rc & 8
