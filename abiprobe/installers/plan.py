"""What the user's installer would do to an environment: its own dry run, read, never imitated.

pip: ``pip --python ENV install --dry-run --report - --quiet REQ...`` (``--python`` needs pip 22.3 or
newer; abiprobe's own pip runs it against ENV), whose JSON installation report lists every wheel it
would install; an installed distribution of the same name is replaced by it. uv: ``uv pip install
--dry-run --python ENV REQ...``, whose ``- name==version`` / ``+ name==version`` lines say what goes and
what comes (``Would uninstall`` / ``Would install``, on stderr). Which one: ``--installer`` or
``ABIPROBE_INSTALLER`` when set, else pip when its configuration sets indexes, else uv when uv's does and
uv is at hand, else pip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from abiprobe.errors import AbiprobeError, UsageError

PIP_MINIMUM = (22, 3)  # the first pip with --python
_UV_LINE = re.compile(r"^\s*([+-])\s+([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:==\s*(\S+)|@\s*(\S+))")


class InstallerRefused(AbiprobeError):
    """The installer would not install the requirements here (its own last line says why)."""


@dataclass(frozen=True)
class PlannedWheel:
    """A distribution the installer would install: its wheel's URL and sha256 when the report gives them."""

    name: str
    version: str
    url: str | None = None
    sha256: str | None = None
    requested: bool = False

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def filename(self) -> str | None:
        if self.url is None:
            return None
        return self.url.rsplit("/", 1)[-1].split("#", 1)[0]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "url": self.url,
            "sha256": self.sha256,
            "requested": self.requested,
        }


@dataclass(frozen=True)
class InstallPlan:
    """The installer's answer: what it would add, which installed distributions that replaces, and
    the command asked."""

    installer: str
    command: tuple[str, ...]
    adds: tuple[PlannedWheel, ...]
    removes: tuple[tuple[str, str], ...] = ()  # (name, version) of replaced installed distributions

    @property
    def removed_names(self) -> frozenset[str]:
        return frozenset(canonicalize_name(n) for n, _ in self.removes)

    def to_json(self) -> dict[str, object]:
        return {
            "installer": self.installer,
            "command": list(self.command),
            "install": [w.to_json() for w in self.adds],
            "remove": [{"name": n, "version": v} for n, v in self.removes],
        }


def _replaced(names: Sequence[str], installed: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    out = []
    for name in names:
        key = canonicalize_name(name)
        if key in installed:
            out.append((name, installed[key]))
    return tuple(out)


def plan_from_pip_report(
    report: Mapping[str, Any], installed: Mapping[str, str], command: Sequence[str] = ()
) -> InstallPlan:
    """pip's installation report (format version 1) as a plan; ``installed`` maps normalized names to
    the versions installed now."""
    adds = []
    for entry in report.get("install") or []:
        meta = entry.get("metadata") or {}
        info = entry.get("download_info") or {}
        hashes = (info.get("archive_info") or {}).get("hashes") or {}
        adds.append(
            PlannedWheel(
                str(meta.get("name")),
                str(meta.get("version")),
                info.get("url"),
                hashes.get("sha256"),
                bool(entry.get("requested")),
            )
        )
    version = str(report.get("pip_version") or "")
    removes = _replaced([w.name for w in adds], installed)
    return InstallPlan(f"pip {version}".strip(), tuple(command), tuple(adds), removes)


def plan_from_uv_output(text: str, installed: Mapping[str, str], command: Sequence[str] = ()) -> InstallPlan:
    """uv's dry-run lines as a plan: ``+ name==version`` would be installed, ``- name==version`` removed."""
    adds, removes = [], []
    for line in text.splitlines():
        m = _UV_LINE.match(line)
        if m is None:
            continue
        sign, name, version, url = m.groups()
        if sign == "-":
            removes.append((name, version or installed.get(canonicalize_name(name), "")))
        else:
            adds.append(PlannedWheel(name, version or "", url))
    return InstallPlan("uv", tuple(command), tuple(adds), tuple(removes))


def uv_command() -> list[str] | None:
    """uv on PATH, else ``python -m uv`` where the uv package is importable (probe's own rule)."""
    import importlib.util

    found = shutil.which("uv")
    if found:
        return [found]
    return [sys.executable, "-m", "uv"] if importlib.util.find_spec("uv") is not None else None


def choose_installer(prefer: str | None, environ: Mapping[str, str], cwd: Path) -> str:
    """pip or uv, as the user's installer configuration says (module docstring)."""
    from abiprobe.installers.indexes import PIP_INDEX_KEYS, uv_sets_indexes
    from abiprobe.installers.pip import pip_settings
    from abiprobe.installers.uv import uv_settings

    choice = prefer if prefer not in (None, "", "auto") else environ.get("ABIPROBE_INSTALLER")
    if choice:
        if choice not in ("pip", "uv"):
            raise UsageError(f"unknown installer {choice!r}; choose pip or uv")
        return choice
    if any(k in pip_settings(environ) for k in PIP_INDEX_KEYS):
        return "pip"
    if uv_command() is not None and uv_sets_indexes(uv_settings(environ, cwd)):
        return "uv"
    return "pip"


def _pip_command(python: str, requirements: Sequence[str], options: Sequence[str]) -> list[str]:
    try:
        import pip
    except ImportError:
        raise UsageError("pip is not importable here: install pip (22.3 or newer) or choose uv") from None
    found = tuple(int(p) for p in re.findall(r"\d+", pip.__version__)[:2])
    if found < PIP_MINIMUM:
        raise UsageError(f"pip {pip.__version__} has no --python option: pip 22.3 or newer is needed")
    return [
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--dry-run",
        "--report",
        "-",
        "--quiet",
        "--disable-pip-version-check",
        *options,
        *requirements,
    ]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def ask_installer(
    python: str,
    requirements: Sequence[str],
    installed: Mapping[str, str],
    options: Sequence[str] = (),
    prefer: str | None = None,
) -> InstallPlan:
    """Run the installer's dry run for ``requirements`` in the environment of ``python`` and read it."""
    installer = choose_installer(prefer, os.environ, Path.cwd())
    if installer == "uv":
        uv = uv_command()
        if uv is None:
            raise UsageError("uv is the chosen installer but is neither on PATH nor importable")
        command = [*uv, "pip", "install", "--dry-run", "--python", python, *options, *requirements]
    else:
        command = _pip_command(python, requirements, options)
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"cannot run {installer}: {exc}") from None
    if proc.returncode != 0:
        raise InstallerRefused(
            f"{installer} would not install {' '.join(requirements)} here: "
            f"{_last_line(proc.stderr or proc.stdout)}"
        )
    if installer == "uv":
        return plan_from_uv_output(proc.stderr + proc.stdout, installed, command)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise InstallerRefused(f"pip's dry-run report could not be read: {_last_line(proc.stdout)}") from None
    return plan_from_pip_report(report, installed, command)
