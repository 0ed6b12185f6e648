"""Real venvs for tests, with pip isolated from the host's pip / uv settings."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path


def isolated_env(**extra: str) -> dict[str, str]:
    """The environment without the host's pip / uv settings, so only the test's sources count."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return {**env, **extra}


def sh(*cmd: str | Path, env: dict[str, str] | None = None) -> str:
    """Run a command; fail with its output when it fails."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env or isolated_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def make_venv(path: Path, *, with_pip: bool = True) -> Path:
    """``python -m venv`` (``--without-pip`` is much faster); returns the venv's interpreter."""
    sh(sys.executable, "-m", "venv", *([] if with_pip else ["--without-pip"]), path)
    return path / "bin" / "python"


def pip_install(python: Path, *args: str | Path) -> str:
    """Install into ``python``'s environment with this interpreter's pip (works without pip inside)."""
    return sh(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", *args)


def import_in_venv(venv: Path, wheels: Sequence[Path], package: str) -> tuple[int, str]:
    """pip installs ``wheels`` (``--no-deps``) into a fresh venv at ``venv``, whose isolated Python then
    imports ``package``: its exit status and the last line it printed ("" when it printed nothing)."""
    python = make_venv(venv, with_pip=False)
    pip_install(python, "--no-index", *wheels)
    run = subprocess.run([str(python), "-I", "-c", f"import {package}"], capture_output=True, text=True)
    lines = run.stderr.strip().splitlines()
    return run.returncode, (lines[-1] if lines else "")


def run_unpacked(site: Path, wheels: Sequence[Path], code: str) -> subprocess.CompletedProcess[str]:
    """Unpack ``wheels`` into one directory (as an install lays them out, without an installer) and run
    ``code`` in an isolated interpreter with that directory first on ``sys.path``."""
    for wheel in wheels:
        zipfile.ZipFile(wheel).extractall(site)
    prelude = f"import sys; sys.path.insert(0, {str(site)!r}); "
    return subprocess.run([sys.executable, "-I", "-c", prelude + code], capture_output=True, text=True)


def loader_line(site: Path, unit: str, before: str = "import torch") -> str:
    """What the real loader prints opening ``unit`` with ctypes after ``before`` (a path under ``site``,
    unpacked there already, or a bare name the system's search looks for): its last line, paths cut to
    their site-packages form ("" when it loads)."""
    target = str(site / unit) if "/" in unit else unit
    code = f"import sys, ctypes; sys.path.insert(0, {str(site)!r}); {before}; ctypes.CDLL({target!r})"
    run = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    lines = run.stderr.strip().splitlines()
    return lines[-1].replace(f"{site}/", "") if lines else ""
