"""Installed distributions and unpacked directories -> WheelFacts (the `--installed` / `--python` edge)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from abiprobe.binary.wheel import facts_from_tree, parse_metadata, provided_tops, top_level_of
from abiprobe.errors import UsageError, WheelFormatError
from abiprobe.model.facts import DistMetadata, WheelFacts

# Runs inside the inspected interpreter: lists its distributions with their files and metadata text.
_LIST_SCRIPT = r"""
import json, sys
from importlib import metadata
out = []
for d in metadata.distributions():
    try:
        loc = str(d.locate_file(""))
        files = [str(f) for f in (d.files or [])]
        meta = d.read_text("METADATA") or d.read_text("PKG-INFO") or ""
        wheel = d.read_text("WHEEL")
        tl = d.read_text("top_level.txt")
        direct = d.read_text("direct_url.json")
        installer = d.read_text("INSTALLER")
    except Exception as exc:
        print(json.dumps({"error": str(exc)}), file=sys.stderr)
        continue
    out.append({"location": loc, "files": files, "metadata": meta, "wheel": wheel, "top_level": tl,
                "direct_url": direct, "installer": installer})
json.dump({"python": sys.version.split()[0], "executable": sys.executable, "dists": out}, sys.stdout)
"""


@dataclass(frozen=True)
class InstalledDist:
    """One distribution of an environment: its facts and where it lives."""

    facts: WheelFacts
    location: Path
    direct_url: str | None
    installer: str | None

    def with_binaries(self, unread_sources: frozenset[str]) -> WheelFacts:
        """These facts plus the ELF objects among the distribution's files and its Python sources but
        those of ``unread_sources``' packages (read now)."""
        facts = self.facts
        return facts_from_tree(
            self.location, facts.files, facts.filename, facts.metadata, unread_sources=unread_sources
        )


def list_installed(python: str | None = None) -> list[dict[str, object]]:
    """Ask ``python`` (default: this interpreter) for its distributions; raw records."""
    exe = python or sys.executable
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    try:
        proc = subprocess.run(
            [exe, "-I", "-c", _LIST_SCRIPT], capture_output=True, text=True, timeout=120, env=env
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"cannot run the interpreter {exe}: {exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"{exe} could not list its distributions: {last}")
    data = json.loads(proc.stdout)
    dists: list[dict[str, object]] = data["dists"]
    return dists


def installed_distributions(
    python: str | None = None, names: set[str] | None = None, *, unread_sources: frozenset[str] | None
) -> list[InstalledDist]:
    """Facts for every distribution installed for ``python`` (or only the ``names`` given, normalized),
    their binaries and Python sources read as :meth:`InstalledDist.with_binaries` reads them; with
    ``unread_sources`` None only metadata and file lists (nothing is read: seconds for a torch stack)."""
    from packaging.utils import canonicalize_name

    result: list[InstalledDist] = []
    seen: set[str] = set()
    for rec in list_installed(python):
        try:
            tl_text = str(rec["top_level"] or "")
            files = [str(f) for f in rec["files"]]  # type: ignore[attr-defined]
            tops = provided_tops((t.strip() for t in tl_text.splitlines() if t.strip()), files)
            meta = parse_metadata(
                str(rec["metadata"]).encode(),
                str(rec["wheel"]).encode() if rec["wheel"] else None,
                tops,
            )
        except WheelFormatError:
            continue
        key = canonicalize_name(meta.name)
        if key in seen or (names is not None and key not in names):
            continue
        seen.add(key)
        location = Path(str(rec["location"]))
        label = f"{meta.name}-{meta.version} (installed)"
        dist = InstalledDist(
            facts=WheelFacts(filename=label, sha256="", size=0, metadata=meta, files=tuple(files)),
            location=location,
            direct_url=str(rec["direct_url"]) if rec["direct_url"] else None,
            installer=str(rec["installer"]).strip() if rec["installer"] else None,
        )
        if unread_sources is not None:
            dist = replace(dist, facts=dist.with_binaries(unread_sources))
        result.append(dist)
    return result


def facts_from_directory(path: Path, *, unread_sources: frozenset[str]) -> WheelFacts:
    """An unpacked wheel (has a .dist-info) or any directory of binaries, as one WheelFacts (the Python
    sources of ``unread_sources``' packages not read)."""
    files = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    infos = sorted({f.split("/", 1)[0] for f in files if f.split("/", 1)[0].endswith(".dist-info")})
    if len(infos) == 1:
        info = path / infos[0]
        meta_file = info / "METADATA"
        if not meta_file.exists():
            raise WheelFormatError(f"{info}: METADATA is missing")
        wheel_file = info / "WHEEL"
        tl = info / "top_level.txt"
        tops = set(tl.read_text().split()) if tl.exists() else top_level_of(files)
        meta = parse_metadata(
            meta_file.read_bytes(), wheel_file.read_bytes() if wheel_file.exists() else None, tops
        )
    else:
        meta = DistMetadata(
            name=path.resolve().name, version="0", top_level=tuple(sorted(top_level_of(files)))
        )
    return facts_from_tree(path, files, f"{path.name}/", meta, unread_sources=unread_sources)
