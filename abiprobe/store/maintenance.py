"""Whole-cache walks behind ``abiprobe cache info|verify|prune`` and the ``--offline`` staleness notes.

Each walk returns a frozen report with ``to_json``; rendering lives in ``abiprobe.report.cache_text``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from abiprobe.store import entries
from abiprobe.store.entries import CorruptEntryError, ForeignSchemaError, PageRecord
from abiprobe.store.primitives import is_sha256_hex, is_temp_name, remove_quietly, temp_file_is_abandoned

ProblemKind = Literal["corrupt", "foreign", "orphan", "temp", "stray", "unverified"]
UNVERIFIED_REASON = "read by range: the wheel's sha256 was never checked (kept while its zip directory is)"
DAY_S = 86400.0


@dataclass(frozen=True)
class KindStats:
    count: int = 0
    bytes: int = 0

    def to_json(self) -> dict[str, int]:
        return {"count": self.count, "bytes": self.bytes}


@dataclass(frozen=True)
class StalePage:
    url: str
    fetched_at: float
    age_s: float

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "fetched_at": self.fetched_at, "age_s": self.age_s}


@dataclass(frozen=True)
class CacheInfo:
    """Counts and sizes per kind of entry, and the oldest and newest page fetch."""

    root: str
    exists: bool
    readonly: bool
    kinds: dict[str, KindStats] = field(hash=False)
    temp_files: int = 0
    oldest_page: StalePage | None = None
    newest_page: StalePage | None = None
    published_facts: int = 0  # facts entries fetched from published facts (abiprobe.store.published)

    @property
    def total_bytes(self) -> int:
        return sum(stats.bytes for stats in self.kinds.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "exists": self.exists,
            "readonly": self.readonly,
            "kinds": {name: stats.to_json() for name, stats in self.kinds.items()},
            "total_bytes": self.total_bytes,
            "temp_files": self.temp_files,
            "published_facts": self.published_facts,
            "oldest_page": None if self.oldest_page is None else self.oldest_page.to_json(),
            "newest_page": None if self.newest_page is None else self.newest_page.to_json(),
        }


@dataclass(frozen=True)
class CacheProblem:
    """One entry that did not prove itself; ``path`` is relative to the cache root."""

    path: str
    kind: ProblemKind
    reason: str
    removed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "reason": self.reason, "removed": self.removed}


@dataclass(frozen=True)
class VerifyReport:
    root: str
    checked: dict[str, int] = field(hash=False)
    problems: tuple[CacheProblem, ...] = ()
    repaired: bool = False

    @property
    def corrupt(self) -> tuple[CacheProblem, ...]:
        return tuple(p for p in self.problems if p.kind == "corrupt")

    @property
    def unverified(self) -> tuple[CacheProblem, ...]:
        return tuple(p for p in self.problems if p.kind == "unverified")

    @property
    def ok(self) -> bool:
        """True when nothing is damaged; orphans, temp files, foreign and unverified entries are noted."""
        return not self.corrupt

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "ok": self.ok,
            "repaired": self.repaired,
            "checked": dict(self.checked),
            "problems": [p.to_json() for p in self.problems],
        }


@dataclass(frozen=True)
class PruneReport:
    root: str
    removed: dict[str, int] = field(hash=False)
    freed_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "removed": dict(self.removed), "freed_bytes": self.freed_bytes}


@dataclass(frozen=True)
class _Entry:
    kind: str  # pages, bodies, facts, metadata, hosts, temp, stray
    path: Path
    name: str  # the hash a file is named by ("" for hosts, temp and stray files)
    url_hash: str = ""  # bodies: the page they belong to


def _walk(root: Path) -> Iterator[_Entry]:
    hosts = root / entries.HOSTS_FILE
    if hosts.is_file():
        yield _Entry("hosts", hosts, "")
    for directory in (entries.PAGES_DIR, entries.FACTS_DIR, entries.ANALYSES_DIR, entries.METADATA_DIR):
        base = root / directory
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file():
                yield _classify(directory, path)


def _classify(directory: str, path: Path) -> _Entry:
    name = path.name
    if is_temp_name(name):
        return _Entry("temp", path, "")
    if directory == entries.PAGES_DIR and name.endswith(entries.BODY_SUFFIX):
        url_part, _, body_part = name[: -len(entries.BODY_SUFFIX)].partition(".")
        if is_sha256_hex(url_part) and is_sha256_hex(body_part):
            return _Entry("bodies", path, body_part, url_part)
    kind, suffix = {
        entries.PAGES_DIR: ("pages", entries.PAGE_SUFFIX),
        entries.FACTS_DIR: ("facts", entries.FACTS_SUFFIX),
        entries.ANALYSES_DIR: ("analyses", entries.ANALYSIS_SUFFIX),
        entries.METADATA_DIR: ("metadata", entries.METADATA_SUFFIX),
    }[directory]
    if directory == entries.FACTS_DIR and name.endswith(entries.SUMMARY_SUFFIX):
        kind, suffix = "summaries", entries.SUMMARY_SUFFIX
    stem = entries.entry_name(path, suffix)
    if directory == entries.FACTS_DIR:  # <sha256>, or <sha256>.<rules> for facts read under other rules
        stem, rules = entries.split_facts_name(stem)
        if rules and not (len(rules) == 16 and all(c in "0123456789abcdef" for c in rules)):
            stem = ""
    if name.endswith(suffix) and is_sha256_hex(stem) and path.parent.name == stem[:2]:
        return _Entry(kind, path, stem)
    return _Entry("stray", path, "")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_page(entry: _Entry) -> PageRecord:
    try:
        data = entry.path.read_bytes()
    except OSError as exc:
        raise CorruptEntryError(f"unreadable: {exc.strerror}") from exc
    return entries.decode_page(data, entry.name)


def collect_info(root: Path, *, readonly: bool) -> CacheInfo:
    counts: dict[str, list[int]] = {kind: [0, 0] for kind in entries.KINDS}
    temp_files = published = 0
    pages: list[StalePage] = []
    for entry in _walk(root):
        if entry.kind == "temp":
            temp_files += 1
            continue
        if entry.kind not in counts:
            continue
        counts[entry.kind][0] += 1
        counts[entry.kind][1] += _size(entry.path)
        if entry.kind == "facts":
            header = entries.facts_header(entry.path, entry.name)
            published += header is not None and header.get("published") is True
        if entry.kind == "pages":
            try:
                record = _read_page(entry)
            except (CorruptEntryError, ForeignSchemaError):
                continue
            pages.append(StalePage(record.url, record.fetched_at, 0.0))
    pages.sort(key=lambda p: (p.fetched_at, p.url))
    return CacheInfo(
        root=str(root),
        exists=root.is_dir(),
        readonly=readonly,
        kinds={kind: KindStats(count, size) for kind, (count, size) in counts.items()},
        temp_files=temp_files,
        oldest_page=pages[0] if pages else None,
        newest_page=pages[-1] if pages else None,
        published_facts=published,
    )


def find_stale_pages(root: Path, max_age_s: float, now: float) -> tuple[StalePage, ...]:
    stale: list[StalePage] = []
    for entry in _walk(root):
        if entry.kind != "pages":
            continue
        try:
            record = _read_page(entry)
        except (CorruptEntryError, ForeignSchemaError):
            continue
        if now - record.fetched_at > max_age_s:
            stale.append(StalePage(record.url, record.fetched_at, now - record.fetched_at))
    return tuple(sorted(stale, key=lambda p: (p.fetched_at, p.url)))


def _check(entry: _Entry) -> bool:
    """Decode one entry fully; raises what its decoder raises. False for wheel facts and metadata that
    were never checked against the wheel's sha256."""
    try:
        data = entry.path.read_bytes()
    except OSError as exc:
        raise CorruptEntryError(f"unreadable: {exc.strerror}") from exc
    if entry.kind == "pages":
        entries.decode_page(data, entry.name)
    elif entry.kind == "bodies":
        entries.decode_body(data, entry.name)
    elif entry.kind == "facts":
        return entries.decode_facts(data, entry.name).verified
    elif entry.kind == "summaries":
        entries.decode_summary(data, entry.name)
    elif entry.kind == "analyses":
        entries.decode_analysis(data, entry.name)
    elif entry.kind == "metadata":
        return entries.decode_metadata(data, entry.name).directory_sha256 is None
    elif entry.kind == "hosts":
        entries.decode_hosts(data)
    return True


def verify_cache(root: Path, *, repair: bool, now: float) -> VerifyReport:
    """Decode every entry; with ``repair`` delete damaged entries, orphan bodies and dead temp files."""
    checked = {kind: 0 for kind in entries.KINDS}
    problems: list[CacheProblem] = []
    page_bodies: dict[Path, tuple[str, str]] = {}
    sound_bodies: set[tuple[str, str]] = set()

    def note(entry: _Entry, kind: ProblemKind, reason: str, remove: bool) -> None:
        removed = repair and remove
        if removed:
            remove_quietly(entry.path)
        problems.append(CacheProblem(str(entry.path.relative_to(root)), kind, reason, removed))

    all_entries = list(_walk(root))
    for entry in all_entries:
        if entry.kind == "temp":
            if temp_file_is_abandoned(entry.path, now):
                note(entry, "temp", "unfinished write left behind", remove=True)
            continue
        if entry.kind == "stray":
            note(entry, "stray", "not a file the cache writes", remove=False)
            continue
        checked[entry.kind] += 1
        if entry.kind == "bodies":
            continue
        try:
            verified = _check(entry)
        except ForeignSchemaError as exc:
            note(entry, "foreign", str(exc), remove=False)
        except CorruptEntryError as exc:
            note(entry, "corrupt", str(exc), remove=True)
        else:
            if not verified:
                note(entry, "unverified", UNVERIFIED_REASON, remove=False)
            if entry.kind == "pages":
                page_bodies[entry.path] = (entry.name, _read_page(entry).body_sha256)
    wanted = set(page_bodies.values())
    for entry in all_entries:
        if entry.kind != "bodies":
            continue
        if (entry.url_hash, entry.name) not in wanted:
            note(entry, "orphan", "no page refers to this body", remove=True)
            continue
        try:
            _check(entry)
        except CorruptEntryError as exc:
            note(entry, "corrupt", str(exc), remove=True)
        else:
            sound_bodies.add((entry.url_hash, entry.name))
    for entry in all_entries:
        if entry.path in page_bodies and page_bodies[entry.path] not in sound_bodies:
            note(entry, "corrupt", "its body is missing or damaged", remove=True)
    return VerifyReport(str(root), checked, tuple(problems), repaired=repair)


def prune_cache(
    root: Path, *, older_than_days: float | None, pages: bool, facts: bool, now: float
) -> PruneReport:
    """Delete pages by fetch time, facts and metadata by file age; orphans and dead temp files always."""
    limit_s = None if older_than_days is None else older_than_days * DAY_S
    removed = {kind: 0 for kind in (*entries.KINDS, "temp")}
    freed = 0
    kept_bodies: set[tuple[str, str]] = set()
    all_entries = list(_walk(root))

    def drop(entry: _Entry) -> None:
        nonlocal freed
        freed += remove_quietly(entry.path)
        removed[entry.kind] += 1

    for entry in all_entries:
        if entry.kind == "pages":
            try:
                record: PageRecord | None = _read_page(entry)
            except (CorruptEntryError, ForeignSchemaError):
                record = None
            too_old = record is None or limit_s is None or now - record.fetched_at > limit_s
            if pages and too_old:
                drop(entry)
            elif record is not None:
                kept_bodies.add((entry.name, record.body_sha256))
        elif entry.kind in ("facts", "summaries", "analyses", "metadata") and facts:
            try:
                age = now - entry.path.stat().st_mtime
            except OSError:
                continue
            if limit_s is None or age > limit_s:
                drop(entry)
        elif entry.kind == "temp" and temp_file_is_abandoned(entry.path, now):
            drop(entry)
    for entry in all_entries:
        if entry.kind == "bodies" and (entry.url_hash, entry.name) not in kept_bodies:
            drop(entry)
    return PruneReport(str(root), {k: v for k, v in removed.items() if v}, freed)
