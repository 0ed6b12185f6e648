"""`check --installed` scope over a real venv: the stack by default, --all (optional modules), --package."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.cbuild import build_shared
from support.wheelbuild import build_wheel

from abiprobe.analyze.scope import OPTIONAL_NOTE
from abiprobe.cli import main

CHECK_SCHEMA = json.loads((Path(__file__).parents[1] / "abiprobe/schemas/check.schema.json").read_text())

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
PLAT = "manylinux_2_28_x86_64"
P228 = PLAT


@dataclass(frozen=True)
class Env:
    python: Path


def _module(out: Path, name: str, body: str = "", link: list[Path] | None = None) -> Path:
    src = f"{body}\nvoid* PyInit_{name.split('.')[0]}(void) {{ return (void*)0; }}\n"
    return build_shared(out, f"{name}{SUFFIX}", src, link=link or [])


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    """A venv with a torch-like wheel requiring ``helper`` and an unrelated ``mpilike`` whose optional MPI
    build needs libmpi.so.12, which the environment lacks."""
    root = tmp_path_factory.mktemp("scope")
    b = root / "build"
    libmpi = build_shared(
        b / "absent", "libmpi.so.12", "int MPI_Init(void) { return 0; }", soname="libmpi.so.12"
    )
    tag = f"{TAG}-{TAG}-{PLAT}"
    wheels = [
        build_wheel(
            root / "w",
            "torch",
            "2.11.0",
            {"torch/__init__.py": b"", f"torch/_C{SUFFIX}": _module(b, "_C")},
            tag=tag,
            requires_dist=["helper>=1", "absent-extra; extra == 'x'"],
        ),
        build_wheel(root / "w", "helper", "1.0", {f"helper/_ok{SUFFIX}": _module(b, "_ok")}, tag=tag),
        build_wheel(
            root / "w",
            "mpilike",
            "4.0",
            {
                "mpilike/__init__.py": b"",
                f"mpilike/MPI.mpich{SUFFIX}": _module(
                    b, "MPI.mpich", "int MPI_Init(void);\nint go(void) { return MPI_Init(); }", [libmpi]
                ),
            },
            tag=tag,
        ),
    ]
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    pip_env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    pip_env["PIP_CONFIG_FILE"] = os.devnull
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            *map(str, wheels),
        ],
        check=True,
        env=pip_env,
        capture_output=True,
    )
    return Env(python)


def _check(env: Env, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["check", "--installed", "--python", str(env.python), "--profile", P228, "--json", *extra])
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, CHECK_SCHEMA)  # an environment read: no install closure
    assert data["install"] is None
    return code, data


def _failing(data: dict[str, Any]) -> dict[str, list[str]]:
    return {
        u["path"]: [v["explanation"] for v in u["verdicts"] if v["status"] == "fail"]
        for u in data["units"]
        if u["status"] == "fail"
    }


def test_default_scope_is_the_stack_and_what_it_requires(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    code, data = _check(env, capsys)
    assert code == 0
    assert (sorted(data["wheels"]), sorted(u["path"] for u in data["units"])) == (
        ["helper 1.0", "torch 2.11.0"],
        [f"helper/_ok{SUFFIX}", f"torch/_C{SUFFIX}"],
    )


def test_all_judges_every_extension_and_calls_the_others_optional(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    code, data = _check(env, capsys, "--all")
    assert code == 128  # `import mpilike` never loads its MPI module: a feature that will not load
    assert _failing(data) == {
        f"mpilike/MPI.mpich{SUFFIX}": [
            "libmpi.so.12 not found: not in the set and not a system library of manylinux_2_28_x86_64 "
            f"({OPTIONAL_NOTE})",
            f"undefined symbol MPI_Init: no library in its load scope exports it ({OPTIONAL_NOTE})",
        ]
    }


def test_package_option_chooses_the_distributions(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    code, data = _check(env, capsys, "--package", "mpilike")
    assert (code, data["wheels"]) == (128, ["mpilike 4.0"])


def test_package_not_installed_is_a_usage_error(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(["check", "--installed", "--python", str(env.python), "--package", "nope"])
    assert (code, capsys.readouterr().err.strip().splitlines()[-1]) == (
        2,
        "abiprobe: error: --package nope: not in the checked set",
    )
