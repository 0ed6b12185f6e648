"""An environment before an upgrade: each distribution, where it came from, and its binaries' fingerprints.

The snapshot is versioned JSON (``snapshot.schema.json``). A wheel's sha256 is known only when the
installer recorded it (``direct_url.json``) or the wheel file is found in a directory given to us and
its RECORD matches what is installed; otherwise the RECORD-derived content fingerprint stands in.
The values only (core); ``abiprobe.host.snapshot`` takes and loads them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from packaging.utils import canonicalize_name

from abiprobe import __version__
from abiprobe.errors import UsageError
from abiprobe.model.facts import ElfFacts

SNAPSHOT_KIND = "abiprobe-snapshot"
SNAPSHOT_SCHEMA_VERSION = 1
SourceKind = Literal["index", "url", "file", "dir", "editable", "vcs"]

# dist-info files an installer writes itself: never part of the wheel's content.
_INSTALLER_FILES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})


@dataclass(frozen=True)
class Source:
    """Where a distribution came from, as far as the installer recorded it."""

    kind: SourceKind
    url: str | None = None
    sha256: str | None = None  # the archive hash from direct_url.json
    commit: str | None = None  # vcs_info.commit_id


@dataclass(frozen=True)
class WheelFile:
    """The wheel file a distribution was installed from, proven by a matching content fingerprint."""

    filename: str
    sha256: str
    path: str | None = None  # where it was found (a --wheels-dir), None when known from direct_url.json


@dataclass(frozen=True)
class Extension:
    """One ELF object of a distribution: what the loader and the GPU driver will look at."""

    path: str
    sha256: str | None
    size: int
    needed: tuple[str, ...]
    cuda_majors: tuple[int, ...]
    gpu_code: tuple[str, ...]


@dataclass(frozen=True)
class SnapshotDist:
    name: str
    version: str
    installer: str | None
    location: str
    source: Source
    content_sha256: str  # sha256 over the sorted (path, RECORD hash) lines of the installed payload
    files: int
    wheel: WheelFile | None = None
    extensions: tuple[Extension, ...] = ()

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)


@dataclass(frozen=True)
class Snapshot:
    python: str
    executable: str
    created: str
    index_url: str | None
    index_origin: str | None
    wheel_dirs: tuple[str, ...]
    dists: tuple[SnapshotDist, ...]
    generated_by: str = field(default=f"abiprobe {__version__}")

    def dist(self, name: str) -> SnapshotDist | None:
        key = canonicalize_name(name)
        return next((d for d in self.dists if d.key == key), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": SNAPSHOT_KIND,
            "schema_version": SNAPSHOT_SCHEMA_VERSION,
            "generated_by": self.generated_by,
            "created": self.created,
            "python": self.python,
            "executable": self.executable,
            "index": {"url": self.index_url, "origin": self.index_origin},
            "wheel_dirs": list(self.wheel_dirs),
            "dists": [asdict(d) for d in self.dists],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Snapshot:
        try:
            dists = tuple(_dist_from_json(d) for d in data["dists"])
            return cls(
                python=data["python"],
                executable=data["executable"],
                created=data["created"],
                index_url=data["index"]["url"],
                index_origin=data["index"]["origin"],
                wheel_dirs=tuple(data["wheel_dirs"]),
                dists=dists,
                generated_by=data.get("generated_by", ""),
            )
        except (KeyError, TypeError) as exc:
            raise UsageError(f"snapshot is missing or has a malformed field: {exc}") from None


def _dist_from_json(d: dict[str, Any]) -> SnapshotDist:
    wheel = WheelFile(**d["wheel"]) if d.get("wheel") else None
    exts = tuple(
        Extension(
            e["path"],
            e["sha256"],
            e["size"],
            tuple(e["needed"]),
            tuple(e["cuda_majors"]),
            tuple(e["gpu_code"]),
        )
        for e in d.get("extensions", ())
    )
    return SnapshotDist(
        name=d["name"],
        version=d["version"],
        installer=d["installer"],
        location=d["location"],
        source=Source(**d["source"]),
        content_sha256=d["content_sha256"],
        files=d["files"],
        wheel=wheel,
        extensions=exts,
    )


def parse_direct_url(text: str | None) -> Source:
    """PEP 610 ``direct_url.json`` -> Source; no file means the installer took it from an index."""
    if not text:
        return Source("index")
    try:
        data = json.loads(text)
        url = str(data["url"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return Source("index")
    if "vcs_info" in data:
        info = data["vcs_info"] or {}
        return Source("vcs", f"{info.get('vcs', 'git')}+{url}", commit=info.get("commit_id"))
    if "dir_info" in data:
        editable = bool((data["dir_info"] or {}).get("editable"))
        return Source("editable" if editable else "dir", url)
    archive = data.get("archive_info") or {}
    sha = (archive.get("hashes") or {}).get("sha256")
    if sha is None and str(archive.get("hash", "")).startswith("sha256="):
        sha = str(archive["hash"])[len("sha256=") :]
    return Source("file" if url.startswith("file:") else "url", url, sha256=sha)


def record_rows(text: str) -> list[tuple[str, str]]:
    """(path, hash) rows of a RECORD file that carry a hash."""
    rows: list[tuple[str, str]] = []
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[1]:
            rows.append((row[0], row[1]))
    return rows


def _payload(path: str) -> bool:
    """Whether a site-packages relative path is wheel content an installer copies verbatim."""
    if path.startswith("..") or path.startswith("/") or "__pycache__/" in path or path.endswith(".pyc"):
        return False
    head, _, rest = path.partition("/")
    if head.endswith(".dist-info"):
        return rest == "METADATA"
    return not head.endswith(".data")


def content_fingerprint(rows: Iterable[tuple[str, str]]) -> str:
    """sha256 over the sorted ``path,hash`` lines of the payload; equal for a wheel and its install."""
    lines = sorted(f"{p},{h}" for p, h in rows if _payload(p))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def extension_of(elf: ElfFacts) -> Extension:
    return Extension(
        path=elf.path,
        sha256=elf.sha256,
        size=elf.size,
        needed=elf.needed,
        cuda_majors=elf.cuda_majors(),
        gpu_code=tuple(sorted({g.label() for g in elf.gpu_code})),
    )
