"""`check`'s headline and exit status follow what importing does; a feature loaded on first use that
will not load is listed under its own heading, with its own exit bit (128)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.loading_wheels import build_loading_wheels
from support.schemas import assert_valid

from abiprobe.cli import main


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with lazyx, whose kernels() loads libkernels.so (which needs an absent library) on first use."""
    root = tmp_path_factory.mktemp("lazy")
    wheels = build_loading_wheels(root)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    exe = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(exe), "install", "-q", "--no-deps", str(wheels.lazyx)],
        check=True, env=env, capture_output=True,
    )  # fmt: skip
    return exe


def test_feature_failing_on_first_use_sets_its_own_bit_and_not_the_import_ones(
    python: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an installed package that imports, whose lazily loaded library cannot load
    capsys.readouterr()
    code = main(["check", "--installed", "--python", str(python), "--package", "lazyx", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert_valid(data, "check")
    # THEN importing is ok, the exit status is bit 128 alone, and the feature is listed as such
    assert (code, data["import_status"], data["status"]) == (128, "ok", "fail")
    assert [(f["path"], f["status"]) for f in data["features"]] == [("lazyx/libkernels.so", "fail")]


def test_headline_is_the_import_and_the_feature_has_its_own_heading(
    python: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    main(["check", "--installed", "--python", str(python), "--package", "lazyx"])
    out = capsys.readouterr().out
    lines = out.strip().splitlines()
    assert lines[-1].startswith("OK ")
    assert any(line.startswith("features that will not load (1;") for line in lines)
    assert any(line.startswith("  lazyx/libkernels.so (lazyx 1.0): ") for line in lines)
