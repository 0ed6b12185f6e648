"""The chosen set as a requirements file pip and uv install as is: exact wheels pinned by sha256.

Each line is ``name @ URL --hash=sha256:...``; installing with ``--no-deps --require-hashes`` installs
exactly these wheels and nothing resolved at install time. Wheels served by the default registry are
written ``name==version --hash=sha256:...`` instead: the installer takes them from the user's own index
configuration (a mirror works too) and the hash still admits only that one file, and no registry host
name lands in a committed lock file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from abiprobe.errors import AbiprobeError
from abiprobe.model.hosts import registry_file_host
from abiprobe.model.target import Target
from abiprobe.solve.candidates import StackCandidate


class LockError(AbiprobeError):
    """A chosen wheel cannot be locked (no sha256 known)."""


@dataclass(frozen=True)
class LockedWheel:
    name: str
    version: str
    url: str
    sha256: str
    role: str


def locked_wheels(wheels: Sequence[StackCandidate]) -> list[LockedWheel]:
    out: list[LockedWheel] = []
    for w in wheels:
        sha = w.candidate.file.sha256 or (w.info.sha256 if w.info is not None else None)
        if not sha:
            raise LockError(f"{w.filename}: no sha256 from the index or the facts; cannot lock it")
        out.append(LockedWheel(str(w.name), str(w.version), w.candidate.file.url, sha, w.role))
    return out


def render_lock(wheels: Sequence[LockedWheel], target: Target, *, note: str = "") -> str:
    """Requirements-file text, stack members first, then the runtime wheels they pin."""
    lines = [
        f"# abiprobe lock for {target.key()}",
        "# install: pip install --no-deps --require-hashes -r THIS_FILE",
        "#      or: uv pip install --no-deps --require-hashes -r THIS_FILE",
    ]
    if note:
        lines.append(f"# {note}")
    registry_files = registry_file_host()
    for w in wheels:
        lines.append(f"# {w.role}: {w.name} {w.version}")
        if registry_files is not None and urlsplit(w.url).hostname == registry_files:
            lines.append(f"{w.name}=={w.version} \\")
        else:
            lines.append(f"{w.name} @ {w.url} \\")
        lines.append(f"    --hash=sha256:{w.sha256}")
    return "\n".join(lines) + "\n"
