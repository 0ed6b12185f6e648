"""The Python a check for this host judges with: the one running abiprobe when it is the target's
version, else ``pythonX.Y`` on PATH resolved past a launcher script (pyenv's shims are shell scripts,
whose bytes are no ELF program to read libpython from)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from abiprobe.commands.check import target_interpreter
from abiprobe.host.ldconfig import interpreter_libraries
from abiprobe.model.target import Target

NEXT = f"3.{sys.version_info[1] + 1}"  # a version this test's launcher stands for


def _target(python: str) -> Target:
    return Target.parse(cuda="13.0", arch=None, python=python, platform=None, driver=None)


def test_the_running_interpreter_serves_its_own_version() -> None:
    assert target_interpreter(_target(f"{sys.version_info[0]}.{sys.version_info[1]}")) == sys.executable


def test_a_launcher_script_on_path_is_resolved_to_the_program_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a shell script named python3.N on PATH that runs a real interpreter, as pyenv's shims do
    launcher = tmp_path / f"python{NEXT}"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    # THEN the interpreter judged with is the program, and the script itself reads as no libraries
    assert target_interpreter(_target(NEXT)) == sys.executable
    assert interpreter_libraries(launcher) == {}


def test_a_launcher_that_fails_gives_no_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a launcher for a version it has no interpreter for (pyenv: "command not found")
    launcher = tmp_path / f"python{NEXT}"
    launcher.write_text("#!/bin/sh\necho 'pyenv: command not found' >&2\nexit 127\n")
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    # THEN none is known (libpython stays unknown rather than judged with another Python)
    assert target_interpreter(_target(NEXT)) is None
