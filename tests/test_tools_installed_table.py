"""tools/installed_table.py over a small real venv: the static verdict of each distribution with native
code beside a real import of it."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

from support.cbuild import build_shared
from support.wheelbuild import build_wheel

REPO = Path(__file__).resolve().parents[1]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"


def _package(root: Path, name: str, link: list[Path]) -> Path:
    src = (
        "int dep_go(void);\nint call(void) { return dep_go(); }\n"
        if link
        else "int call(void) { return 1; }\n"
    )
    ext = build_shared(
        root / name, f"_ext{SUFFIX}", src + "void *PyInit__ext(void) { return 0; }\n", link=link
    )
    init = b"from . import _ext\n" if link else b""  # a module whose PyInit returns NULL would not import
    files: dict[str, bytes | Path] = {
        f"{name}/__init__.py": init,
        f"{name}/_ext{SUFFIX}": ext,
    }
    return build_wheel(root / "w", name, "1.0", files, tag=f"{TAG}-{TAG}-manylinux_2_28_x86_64")


def test_table_puts_static_verdicts_beside_real_imports(tmp_path: Path) -> None:
    # GIVEN a venv with one package that loads and one whose extension needs a library the host lacks
    absent = build_shared(
        tmp_path / "absent", "libtabledep.so.4", "int dep_go(void) { return 4; }", soname="libtabledep.so.4"
    )
    wheels = [_package(tmp_path, "goodpkg", []), _package(tmp_path, "badpkg", [absent])]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_")) and k != "LD_LIBRARY_PATH"
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", *wheels],
        check=True, env=env, capture_output=True,
    )  # fmt: skip
    # WHEN the tool runs for that environment
    out = tmp_path / "out"
    tool = REPO / "tools" / "installed_table.py"
    proc = subprocess.run(
        [sys.executable, str(tool), "--python", str(python), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    # THEN each row has the static verdict and the real import, and they agree
    rows = {r["distribution"]: r for r in json.loads((out / "rows.json").read_text())["rows"]}
    assert (proc.returncode, sorted(rows)) == (0, ["badpkg 1.0", "goodpkg 1.0"]), proc.stderr
    assert (rows["goodpkg 1.0"]["static"], rows["goodpkg 1.0"]["real"], rows["goodpkg 1.0"]["agree"]) == (
        "ok",
        "ok",
        "yes",
    )
    bad = rows["badpkg 1.0"]
    assert (bad["static"], bad["agree"], bad["modules"]) == ("fail", "yes", ["badpkg"])
    assert "libtabledep.so.4" in bad["real"]
    assert "| badpkg 1.0 | fail: libtabledep.so.4 not found by this host's loader" in proc.stdout
