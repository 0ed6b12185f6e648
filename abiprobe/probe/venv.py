"""Throwaway venvs and exact offline installs: uv when found, the host's pip otherwise."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from abiprobe.binary.zipguard import copy_member, open_zip
from abiprobe.errors import AbiprobeError, WheelFormatError
from abiprobe.probe.procs import Finished, ProcessRegistry

InstallerKind = Literal["uv", "pip"]


class InstallError(AbiprobeError):
    """A venv could not be created or the wheels could not be installed into it."""


@dataclass(frozen=True)
class Installer:
    kind: InstallerKind
    argv: tuple[str, ...]  # command prefix: ("/usr/bin/uv",) or (python, "-m", "pip")


def find_installer(preference: str = "auto") -> Installer:
    """uv on PATH or as ``python -m uv``; else the host's pip driving the venv with ``--python``."""
    if preference in ("auto", "uv"):
        uv = shutil.which("uv")
        if uv:
            return Installer("uv", (uv,))
        if importlib.util.find_spec("uv") is not None:
            return Installer("uv", (sys.executable, "-m", "uv"))
        if preference == "uv":
            raise InstallError("uv was asked for but is neither on PATH nor importable (pip install uv)")
    if importlib.util.find_spec("pip") is not None:
        return Installer("pip", (sys.executable, "-m", "pip"))
    raise InstallError("neither uv nor pip is available to install wheels into probe venvs")


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def site_packages(venv: Path) -> Path:
    found = sorted((venv / "lib").glob("python*/site-packages"))
    if not found:
        raise InstallError(f"{venv} has no site-packages directory")
    return found[0]


def _run(procs: ProcessRegistry, argv: list[str], env: dict[str, str], timeout: float) -> Finished:
    done = procs.run(argv, env, timeout)
    if done.timed_out:
        raise InstallError(f"{Path(argv[0]).name} took longer than {timeout:.0f}s")
    return done


def installer_env(tmp: Path) -> dict[str, str]:
    """The installer's environment: no user configuration, temporary files under ``tmp``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "PYTHON"))}
    env["TMPDIR"] = str(tmp)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def create_venv(procs: ProcessRegistry, python: Path, dest: Path, tmp: Path, timeout: float = 120.0) -> Path:
    """A bare venv (no pip inside: installs are driven from outside) at ``dest``."""
    proc = _run(procs, [str(python), "-m", "venv", "--without-pip", str(dest)], installer_env(tmp), timeout)
    if proc.returncode != 0:
        raise InstallError(f"venv creation with {python} failed: {_tail(proc.stderr)}")
    return venv_python(dest)


def install_command(installer: Installer, python: Path, wheels: Sequence[Path]) -> list[str]:
    """Exact and offline: the wheel files themselves, no index, no dependency resolution."""
    files = [str(w) for w in wheels]
    if installer.kind == "uv":
        return [
            *installer.argv,
            "--no-config",
            "pip",
            "install",
            "--python",
            str(python),
            "--offline",
            "--no-index",
            "--no-deps",
            "--quiet",
            *files,
        ]
    return [
        *installer.argv,
        "--isolated",
        "--python",
        str(python),
        "install",
        "--no-index",
        "--no-deps",
        "--no-compile",
        "--no-warn-script-location",
        "--quiet",
        *files,
    ]


def install_wheels(
    procs: ProcessRegistry,
    installer: Installer,
    python: Path,
    wheels: Sequence[Path],
    tmp: Path,
    timeout: float = 600.0,
) -> None:
    if not wheels:
        return
    proc = _run(procs, install_command(installer, python, wheels), installer_env(tmp), timeout)
    if proc.returncode != 0:
        raise InstallError(f"{installer.kind} install failed: {_tail(proc.stderr or proc.stdout)}")


def install_overlay(
    procs: ProcessRegistry, installer: Installer, python: Path, wheels: Sequence[Path], dest: Path, tmp: Path
) -> None:
    """A set's own wheels into ``dest``, a directory put first on ``sys.path``: uv links them from its
    cache (a 370 MB kernel wheel in well under a second once cached); otherwise they are unpacked."""
    if installer.kind != "uv":
        for w in wheels:
            unpack_wheel(w, dest)
        return
    argv = [*install_command(installer, python, wheels), "--target", str(dest)]
    proc = _run(procs, argv, installer_env(tmp), 600.0)
    if proc.returncode != 0:
        raise InstallError(f"uv install into the overlay failed: {_tail(proc.stderr or proc.stdout)}")


def unpack_wheel(wheel: Path, dest: Path) -> list[str]:
    """Unpack a wheel's importable files into ``dest`` (``.data/purelib|platlib`` unwrapped); return paths."""
    written: list[str] = []
    try:
        with open_zip(wheel, wheel.name) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                rel = _install_target(info.filename)
                if rel is None:
                    continue
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "wb") as out:
                    copy_member(zf, info.filename, out)
                mode = (info.external_attr >> 16) & 0o777
                os.chmod(target, 0o755 if mode & 0o111 else 0o644)
                written.append(rel)
    except WheelFormatError as exc:
        raise InstallError(f"cannot unpack {exc}") from None
    except OSError as exc:
        raise InstallError(f"cannot unpack {wheel.name}: {exc.strerror or exc}") from None
    return written


def _install_target(member: str) -> str | None:
    path = PurePosixPath(member)
    if path.is_absolute() or ".." in path.parts:
        return None
    head, _, rest = member.partition("/")
    if head.endswith(".data"):
        scheme, _, inner = rest.partition("/")
        return inner if scheme in ("purelib", "platlib") and inner else None
    return member


def _tail(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"
