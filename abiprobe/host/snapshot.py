"""Take a snapshot of an installed environment: its distributions, their RECORDs, the wheels behind them."""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from abiprobe.binary.wheel import hash_file as sha256_of_file
from abiprobe.binary.wheel_members import installed_path
from abiprobe.binary.zipguard import copy_member, open_zip
from abiprobe.errors import UsageError, WheelFormatError
from abiprobe.host.installed import InstalledDist, installed_distributions
from abiprobe.model.snapshot import (
    SNAPSHOT_KIND,
    SNAPSHOT_SCHEMA_VERSION,
    Snapshot,
    SnapshotDist,
    WheelFile,
    content_fingerprint,
    extension_of,
    parse_direct_url,
    record_rows,
)
from abiprobe.model.stack import default_stack
from abiprobe.report.jsondoc import load_versioned


def load_snapshot(path: Path) -> Snapshot:
    """Read a snapshot file; refuses other kinds and newer schema versions with one line."""
    return Snapshot.from_json(load_versioned(path, SNAPSHOT_KIND, SNAPSHOT_SCHEMA_VERSION, "snapshot"))


def wheel_fingerprint(wheel: Path) -> str | None:
    """The content fingerprint of a wheel file from its RECORD (None when it has none)."""
    try:
        with open_zip(wheel, wheel.name) as zf:
            record = next((n for n in zf.namelist() if n.endswith(".dist-info/RECORD")), None)
            if record is None:
                return None
            buffer = io.BytesIO()
            copy_member(zf, record, buffer)
            text = buffer.getvalue().decode("utf-8", errors="replace")
    except WheelFormatError:
        return None
    return content_fingerprint((installed_path(p), h) for p, h in record_rows(text))


class WheelFinder:
    """Wheel files under some directories, looked up by (name, version) and proven by fingerprint."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        self._by_key: dict[tuple[str, str], list[Path]] = {}
        for d in dirs:
            for p in sorted(d.rglob("*.whl")) if d.is_dir() else ():
                try:
                    name, version, _, _ = parse_wheel_filename(p.name)
                except InvalidWheelFilename:
                    continue
                self._by_key.setdefault((str(name), str(version)), []).append(p)

    def find(self, name: str, version: str, fingerprint: str) -> WheelFile | None:
        from packaging.version import InvalidVersion, Version

        try:
            norm = str(Version(version))
        except InvalidVersion:
            norm = version
        for p in self._by_key.get((canonicalize_name(name), norm), ()):
            if wheel_fingerprint(p) == fingerprint:
                return WheelFile(p.name, sha256_of_file(p), str(p))
        return None


def snapshot_dist(dist: InstalledDist, finder: WheelFinder) -> SnapshotDist:
    """One installed distribution -> its snapshot record (reads its RECORD from disk)."""
    meta = dist.facts.metadata
    info = next(
        (
            f.split("/", 1)[0]
            for f in dist.facts.files
            if f.split("/", 1)[0].endswith(".dist-info") and f.endswith("/RECORD")
        ),
        None,
    )
    rows: list[tuple[str, str]] = []
    if info is not None:
        try:
            text = (dist.location / info / "RECORD").read_text(encoding="utf-8", errors="replace")
            rows = record_rows(text)
        except OSError:
            rows = []
    fingerprint = content_fingerprint(rows)
    source = parse_direct_url(dist.direct_url)
    wheel = finder.find(meta.name, meta.version, fingerprint)
    if wheel is None and source.sha256 and source.url:
        wheel = WheelFile(source.url.rsplit("/", 1)[-1], source.sha256)
    return SnapshotDist(
        name=meta.name,
        version=meta.version,
        installer=dist.installer,
        location=str(dist.location),
        source=source,
        content_sha256=fingerprint,
        files=len(dist.facts.files),
        wheel=wheel,
        extensions=tuple(extension_of(e) for e in dist.facts.elf),
    )


_ENV_SCRIPT = "import json, sys; print(json.dumps([sys.version.split()[0], sys.executable]))"


def take_snapshot(
    python: str | None = None, wheel_dirs: Sequence[Path] = (), *, now: _dt.datetime | None = None
) -> Snapshot:
    """Snapshot the environment of ``python`` (default: this interpreter)."""
    from abiprobe.index.config import default_index

    exe = python or sys.executable
    try:
        out = subprocess.run([exe, "-I", "-c", _ENV_SCRIPT], capture_output=True, text=True, timeout=60)
        version, executable = json.loads(out.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError, ValueError) as exc:
        raise UsageError(f"cannot run the interpreter {exe}: {exc}") from None
    finder = WheelFinder([d.absolute() for d in wheel_dirs])
    unread = default_stack().unread_sources()  # its extensions are read as the built-in stack reads them
    dists = sorted(
        (snapshot_dist(d, finder) for d in installed_distributions(exe, unread_sources=unread)),
        key=lambda d: d.key,
    )
    index_url, origin = default_index(os.environ, Path.cwd())
    stamp = (now or _dt.datetime.now(_dt.timezone.utc)).replace(microsecond=0).isoformat()
    return Snapshot(
        python=version,
        executable=executable,
        created=stamp,
        index_url=index_url,
        index_origin=origin,
        wheel_dirs=tuple(str(d.absolute()) for d in wheel_dirs),
        dists=tuple(dists),
    )
