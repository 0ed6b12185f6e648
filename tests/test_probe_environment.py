"""`abiprobe probe --installed`: an existing environment imported as it is, and a wheel tried on top."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.probe_wheels import TAG, ProbeWheels, build_probe_wheels
from support.wheelbuild import build_wheel

from abiprobe.cli import main


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ProbeWheels]:
    root = tmp_path_factory.mktemp("probe-env")
    wheels = build_probe_wheels(root)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "install", "-q", "--no-index",
         "--no-deps", str(wheels.base), str(wheels.good)],
        check=True,
    )  # fmt: skip
    return venv / "bin/python", wheels


def _probe(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(["probe", "--installed", "--json", *argv])
    [result] = json.loads(capsys.readouterr().out)["results"]
    return code, result


def test_installed_stack_imports_as_it_is(
    env: tuple[Path, ProbeWheels], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a venv where base 1.0 and an extension built against it are installed
    python, _ = env
    # WHEN that environment is probed as it is
    code, result = _probe(capsys, "--python", str(python), "--import-order", "base,good")
    # THEN the import succeeds, with the installed versions and the extension really loaded
    assert (code, result["outcome"]) == (0, "ok"), result
    assert dict(result["versions"]) == {"base": "1.0", "good": "1.0"}  # type: ignore[arg-type]
    assert any(p.endswith(".so") and p.startswith("good/") for p in result["loaded"])  # type: ignore[union-attr]
    assert result["installer"] == "none (installed environment)"


def test_wheel_on_top_of_installed_stack_shadows_it(
    env: tuple[Path, ProbeWheels], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same venv, and base 2.0 (which no longer exports base_v1) as a wheel
    python, wheels = env
    # WHEN base 2.0 is tried on top of the installed stack
    code, result = _probe(capsys, "--python", str(python), "--import-order", "base,good", str(wheels.base2))
    # THEN the installed extension fails on the symbol the upgrade removed, and base 2.0 is what was imported
    assert (code, result["outcome"]) == (1, "undefined_symbol"), result
    assert "base_v1" in str(result["message"])
    assert dict(result["versions"])["base"] == "2.0"  # type: ignore[arg-type]


def test_installed_stack_is_imported_without_an_import_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a venv holding a (fixture) torch distribution and an unrelated package
    torch = build_wheel(tmp_path / "w", "torch", "2.99.0", {"torch/__init__.py": b"VALUE = 1\n"}, tag=TAG)
    other = build_wheel(
        tmp_path / "w", "unrelated", "1.0", {"unrelated/__init__.py": b"raise ImportError\n"}, tag=TAG
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "install", "-q", "--no-index",
         "--no-deps", str(torch), str(other)],
        check=True,
    )  # fmt: skip
    # WHEN the environment is probed with no --import-order
    code, result = _probe(capsys, "--python", str(venv / "bin/python"))
    # THEN the stack's installed packages are what is imported (not the unrelated one)
    assert (code, result["outcome"]) == (0, "ok"), result
    assert dict(result["versions"]) == {"torch": "2.99.0"}  # type: ignore[arg-type]


def test_an_environment_without_the_stack_asks_for_an_import_order(
    env: tuple[Path, ProbeWheels], capsys: pytest.CaptureFixture[str]
) -> None:
    python, _ = env
    assert main(["probe", "--installed", "--python", str(python)]) == 2
    assert "pass --import-order" in capsys.readouterr().err
