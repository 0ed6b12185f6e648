"""What an index says about a project: files as listed (IndexFile), wheels as candidates (Candidate)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

from packaging.tags import Tag
from packaging.utils import (
    BuildTag,
    InvalidWheelFilename,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

NOT_CACHED = "not in the cache (offline)"  # the error of a page an offline run could not answer


@dataclass(frozen=True)
class IndexFile:
    """One file link of a simple-API page.

    ``yanked`` is False, True (no reason given) or the reason; ``core_metadata`` is False, True, or the
    hashes of the PEP 658 ``.metadata`` file. ``duplicate`` marks a filename listed again with other hashes.
    """

    filename: str
    url: str
    hashes: Mapping[str, str] = field(default_factory=dict, hash=False)
    requires_python: str | None = None
    yanked: bool | str = False
    core_metadata: bool | Mapping[str, str] = field(default=False, hash=False)
    upload_time: str | None = None
    size: int | None = None
    index_url: str = ""
    duplicate: bool = False

    @property
    def sha256(self) -> str | None:
        return self.hashes.get("sha256")

    @property
    def is_yanked(self) -> bool:
        return self.yanked is not False

    @property
    def yanked_reason(self) -> str | None:
        return self.yanked if isinstance(self.yanked, str) else None

    @property
    def has_metadata(self) -> bool:
        return self.core_metadata is not False

    @property
    def metadata_url(self) -> str:
        return self.url + ".metadata"

    @property
    def metadata_hashes(self) -> Mapping[str, str]:
        return self.core_metadata if isinstance(self.core_metadata, Mapping) else {}

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "url": self.url,
            "hashes": dict(self.hashes),
            "requires_python": self.requires_python,
            "yanked": self.yanked,
            "core_metadata": self.core_metadata
            if isinstance(self.core_metadata, bool)
            else dict(self.core_metadata),
            "upload_time": self.upload_time,
            "size": self.size,
            "index_url": self.index_url,
            "duplicate": self.duplicate,
        }


@dataclass(frozen=True)
class Candidate:
    """A wheel as abiprobe sees it: parsed filename plus the file link it came from."""

    name: NormalizedName
    version: Version
    build_tag: BuildTag
    tags: frozenset[Tag]
    file: IndexFile

    @property
    def local_label(self) -> str | None:
        return self.version.local

    def tags_summary(self) -> str:
        """Compressed tag set the way wheel filenames spell it, e.g. ``cp310.cp311-abi3-manylinux…``."""
        pys = ".".join(sorted({t.interpreter for t in self.tags}))
        abis = ".".join(sorted({t.abi for t in self.tags}))
        plats = ".".join(sorted({t.platform for t in self.tags}))
        return f"{pys}-{abis}-{plats}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": str(self.name),
            "version": str(self.version),
            "local_label": self.local_label,
            "build_tag": list(self.build_tag) if self.build_tag else None,
            "tags": sorted(str(t) for t in self.tags),
            "file": self.file.to_json(),
        }


@dataclass(frozen=True)
class ProjectPage:
    """A parsed simple-API page (or find-links page): its files and what was odd about it.

    ``problems`` (also among the notes) say the page is malformed: entries skipped, markup broken, a body
    that is not what its Content-Type says. Such a page is never reused without asking the index again."""

    url: str
    files: tuple[IndexFile, ...]
    notes: tuple[str, ...] = ()
    project: str | None = None
    problems: tuple[str, ...] = ()


def mark_duplicates(files: Iterable[IndexFile]) -> tuple[IndexFile, ...]:
    """Flag files whose filename is listed more than once with different hashes; keep them all."""
    files = tuple(files)
    hashes_by_name: dict[str, set[tuple[tuple[str, str], ...]]] = {}
    for f in files:
        hashes_by_name.setdefault(f.filename, set()).add(tuple(sorted(f.hashes.items())))
    dupes = {name for name, seen in hashes_by_name.items() if len(seen) > 1}
    return tuple(replace(f, duplicate=True) if f.filename in dupes else f for f in files)


@functools.lru_cache(maxsize=65536)
def _parse_wheel_filename(filename: str) -> tuple[NormalizedName, Version, BuildTag, frozenset[Tag]]:
    """``parse_wheel_filename`` once per name per run (big pages list thousands, seen several times)."""
    return parse_wheel_filename(filename)


def candidates_from_files(
    files: Iterable[IndexFile], project: str | None = None
) -> tuple[tuple[Candidate, ...], tuple[str, ...]]:
    """Wheels among ``files`` (of ``project`` when given) as Candidates; notes say what was skipped."""
    wanted = canonicalize_name(project) if project else None
    out: list[Candidate] = []
    notes: list[str] = []
    for f in files:
        if not f.filename.endswith(".whl"):
            continue
        try:
            name, version, build, tags = _parse_wheel_filename(f.filename)
        except (InvalidWheelFilename, InvalidVersion) as exc:
            notes.append(f"skipped {f.filename}: {exc}")
            continue
        if wanted is not None and name != wanted:
            continue
        out.append(Candidate(name=name, version=version, build_tag=build, tags=frozenset(tags), file=f))
    return tuple(out), tuple(notes)


def parse_upload_time(text: str | None) -> datetime | None:
    """``2025-04-23T15:03:12Z`` (PEP 700's upload-time, PyTorch's data-upload-time) -> an aware datetime;
    None for no value or one that is not a timestamp. A time without a zone is taken as UTC."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def parse_hash_fragment(fragment: str) -> dict[str, str]:
    """``sha256=abc`` (a URL fragment or a data-core-metadata value) -> ``{"sha256": "abc"}``."""
    name, sep, value = fragment.partition("=")
    if not sep or not name or not value:
        return {}
    return {name.strip().lower(): value.strip().lower()}
