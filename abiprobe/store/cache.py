"""``wheel_index_cache/``: revalidatable index pages, content-addressed wheel facts, PEP 658 metadata.

Plain files that can be committed to git, written atomically, checked on every read: a damaged or
foreign entry is a miss (and a damaged one is deleted), never an exception and never trusted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from abiprobe.errors import CacheError
from abiprobe.model.facts import WheelFacts, WheelSummary
from abiprobe.model.hosts import concrete_bytes, neutral, neutral_bytes
from abiprobe.net.urls import strip_credentials
from abiprobe.store import entries
from abiprobe.store.entries import CorruptEntryError, ForeignSchemaError, MetadataEntry, PageRecord
from abiprobe.store.localstate import local_state_dir
from abiprobe.store.maintenance import (
    CacheInfo,
    CacheProblem,
    KindStats,
    PruneReport,
    StalePage,
    VerifyReport,
    collect_info,
    find_stale_pages,
    prune_cache,
    verify_cache,
)
from abiprobe.store.primitives import (
    atomic_write,
    exclusive_lock,
    host_key,
    is_sha256_hex,
    pretty_json,
    remove_quietly,
    sha256_hex,
)

T = TypeVar("T")

CACHE_DIR_ENV = "ABIPROBE_CACHE_DIR"
REPO_CACHE_DIR = "wheel_index_cache"


@dataclass(frozen=True)
class CachedPage:
    """One index page as last fetched; ``fetched_at`` moves on each successful revalidation."""

    url: str
    body: bytes
    content_type: str
    etag: str | None
    last_modified: str | None
    fetched_at: float
    problems: bool = False  # it parsed with problems (see ProjectPage.problems)
    missing: bool = False  # the index answered 404/410 for it (the body is empty)


def is_stale(page: CachedPage, max_age_s: float, *, now: float | None = None) -> bool:
    """Whether ``page`` was last fetched or revalidated more than ``max_age_s`` seconds ago."""
    return (time.time() if now is None else now) - page.fetched_at > max_age_s


def default_cache_root(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """$ABIPROBE_CACHE_DIR, else an existing ``wheel_index_cache/`` of the repository (or cwd), else the
    user cache directory ($XDG_CACHE_HOME/abiprobe or ~/.cache/abiprobe)."""
    env = os.environ if environ is None else environ
    explicit = env.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    here = (cwd or Path.cwd()).absolute()
    for base in (_repository_root(here), here):
        if base is not None and (base / REPO_CACHE_DIR).is_dir():
            return base / REPO_CACHE_DIR
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "abiprobe"


def _repository_root(start: Path) -> Path | None:
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


class Cache:
    """The cache rooted at ``root``; ``readonly`` makes every write a no-op (a committed, read-only dir)."""

    def __init__(self, root: Path | None = None, *, readonly: bool = False) -> None:
        self.root = Path(root).expanduser() if root is not None else default_cache_root()
        self.readonly = readonly
        self._prepared = False
        self._resolved: str | None = None  # the root resolved, for this machine's notes of its pages

    def __repr__(self) -> str:
        return f"Cache({str(self.root)!r}, readonly={self.readonly})"

    # index pages

    def load_page(self, url: str) -> CachedPage | None:
        """The cached page for ``url`` (credentials ignored), or None on a miss or a damaged entry."""
        key = strip_credentials(url)
        meta_path = entries.page_path(self.root, key)
        meta = b""
        for _attempt in range(2):
            meta = self._read(meta_path) or b""
            if not meta:
                return None
            record = self._decode(meta_path, meta, lambda d: entries.decode_page(d, entries.url_hash(key)))
            if record is None:
                return None
            body_sha = record.body_sha256
            body_file = entries.body_path(self.root, key, body_sha)
            data = self._read(body_file)
            if data is None:
                continue  # a writer may have swapped the page under us: read its new metadata once
            body = self._decode(body_file, data, partial(entries.decode_body, expected_sha256=body_sha))
            if body is None:
                self._drop(meta_path, meta)
                return None
            return CachedPage(
                url=record.url,
                body=concrete_bytes(body),
                content_type=record.content_type,
                etag=record.etag,
                last_modified=record.last_modified,
                fetched_at=self._fetched_at(key, record),
                problems=record.problems,
                missing=record.missing,
            )
        self._drop(meta_path, meta)
        return None

    def page_record(self, url: str) -> PageRecord | None:
        """The small record of a cached page (its body's sha256, when it was fetched), body unread."""
        key = strip_credentials(url)
        meta_path = entries.page_path(self.root, key)
        data = self._read(meta_path)
        if data is None:
            return None
        record = self._decode(meta_path, data, lambda d: entries.decode_page(d, entries.url_hash(key)))
        if record is None:
            return None
        return dataclasses.replace(record, fetched_at=self._fetched_at(key, record))

    # When a page was last fetched or revalidated changes on every run; what it says rarely does. The
    # committed entry is rewritten only when what it says changes, and the newer time is kept on this
    # machine (abiprobe.store.localstate), so a nightly refresh commits no page whose content did not change.

    def _fetched_file(self, key: str) -> Path:
        if self._resolved is None:
            self._resolved = str(self.root.resolve())
        where = hashlib.sha256(f"{self._resolved}\0{key}".encode()).hexdigest()
        return local_state_dir() / "page-fetched" / where[:2] / where

    def _fetched_at(self, key: str, record: PageRecord) -> float:
        """When the page was last fetched or revalidated: this machine's note for the very body the
        entry holds, else the entry's own time."""
        try:
            sha, when = self._fetched_file(key).read_text(encoding="ascii").split()
            return float(when) if sha == record.body_sha256 else record.fetched_at
        except (OSError, ValueError):
            return record.fetched_at

    def _note_fetched(self, key: str, body_sha256: str, fetched_at: float) -> None:
        """This machine's note of when the very body ``body_sha256`` was last confirmed. A note lost in a
        crash only makes the page count from an earlier time (it is asked about sooner), so it is not
        synced to disk; it names its body, so it needs no lock either: it never applies to another."""
        note = f"{body_sha256} {float(fetched_at)!r}".encode("ascii")
        with contextlib.suppress(OSError):
            atomic_write(self._fetched_file(key), note, durable=False)

    def store_page(self, page: CachedPage) -> None:
        """Store ``page`` under its credential-free URL, replacing (and deleting) any older body."""
        if self.readonly:
            return
        key = strip_credentials(page.url)
        stored = neutral_bytes(page.body)
        body_sha = sha256_hex(stored)
        record = PageRecord(
            url=key,
            content_type=page.content_type,
            etag=page.etag,
            last_modified=page.last_modified,
            fetched_at=float(page.fetched_at),
            body_sha256=body_sha,
            body_size=len(stored),
            problems=page.problems,
            missing=page.missing,
        )
        meta_path = entries.page_path(self.root, key)
        with self.lock():
            old = self._current_page_record(meta_path, key)
            if old is not None and dataclasses.replace(old, fetched_at=record.fetched_at) == record:
                self._note_fetched(key, body_sha, record.fetched_at)  # the same page: the entry stays
                return
            self._write(entries.body_path(self.root, key, body_sha), entries.encode_body(stored))
            self._write(meta_path, entries.encode_page(record))
            if old is not None and old.body_sha256 != body_sha:
                remove_quietly(entries.body_path(self.root, key, old.body_sha256))

    def holds_body(self, record: PageRecord, body: bytes) -> bool:
        """Whether ``body``, as fetched, is the very body the page entry of ``record`` holds (by sha256:
        the body itself is not read)."""
        return sha256_hex(neutral_bytes(body)) == record.body_sha256

    def touch_page(self, url: str, fetched_at: float, *, body_sha256: str | None = None) -> None:
        """Record a successful revalidation (HTTP 304) of a cached page; no-op when it is not cached.
        ``body_sha256``: the body the index confirmed, from the record the request was made from (the
        entry is not read again; should it hold another body by now, the note does not apply to it)."""
        if self.readonly:
            return
        key = strip_credentials(url)
        if body_sha256 is None:
            old = self._current_page_record(entries.page_path(self.root, key), key)  # written atomically
            body_sha256 = old.body_sha256 if old is not None else None
        if body_sha256 is not None:
            self._note_fetched(key, body_sha256, fetched_at)

    def _current_page_record(self, meta_path: Path, key: str) -> PageRecord | None:
        data = self._read(meta_path)
        if data is None:
            return None
        return self._decode(meta_path, data, lambda d: entries.decode_page(d, entries.url_hash(key)))

    def stale_pages(self, max_age_s: float, *, now: float | None = None) -> tuple[StalePage, ...]:
        """Every cached page older than ``max_age_s`` seconds, oldest first (for ``--offline`` notes); a
        page this machine confirmed since its entry was written counts from that confirmation."""
        when = time.time() if now is None else now
        out = []
        for page in find_stale_pages(self.root, max_age_s, when):
            record = self.page_record(page.url)
            fetched = record.fetched_at if record is not None else page.fetched_at
            if when - fetched > max_age_s:
                out.append(dataclasses.replace(page, fetched_at=fetched, age_s=when - fetched))
        return tuple(sorted(out, key=lambda p: (p.fetched_at, p.url)))

    # wheel facts

    def load_facts(
        self, sha256: str, *, allow_partial: bool = False, allow_unverified: bool = False, rules: str = ""
    ) -> WheelFacts | None:
        """Facts of the wheel with this sha256, or None on a miss or a damaged/foreign entry.

        Facts with unread members (see ``WheelFacts.unread``) count as a miss unless ``allow_partial``;
        facts whose sha256 was never checked (a range read, ``WheelFacts.verified``) unless
        ``allow_unverified``: the caller then answers for them (``abiprobe.net.remote_wheel.trusted``).
        ``rules``: the key of the read rules they were read under (``abiprobe.store.reads.read_rules_key``;
        empty for the built-in stack's, whose entries are named by the sha256 alone); so for every method
        of facts and summaries."""
        sha = sha256.lower()
        if not is_sha256_hex(sha):
            return None
        path = entries.facts_path(self.root, sha, rules)
        data = self._read(path)
        if data is None:
            return None
        facts = self._decode(path, data, lambda d: entries.decode_facts(d, sha))
        if facts is None or (facts.partial and not allow_partial):
            return None
        return facts if facts.verified or allow_unverified else None

    def store_facts(self, facts: WheelFacts, *, rules: str = "") -> None:
        """Store facts under the wheel's sha256; complete, verified facts already there are kept as is."""
        sha = facts.sha256.lower()
        if not is_sha256_hex(sha) or sha != facts.sha256:
            raise CacheError(f"wheel facts for {facts.filename} carry no valid lower-case sha256")
        if self.readonly:
            return
        path = entries.facts_path(self.root, sha, rules)
        if not entries.facts_entry_is_current(path, sha):  # missing, foreign, partial or unverified
            self._write(path, entries.encode_facts(facts))
        elif facts.partial or not facts.verified:  # complete, verified facts are there: kept, with summary
            return
        self.store_summary(facts.summary(), rules=rules)

    def replace_facts(self, facts: WheelFacts, *, rules: str = "") -> None:
        """Store facts under the wheel's sha256 in place of those there: the same wheel's facts with a
        part read again (its Python, under newer reading rules: ``abiprobe.store.python_rules``)."""
        sha = facts.sha256.lower()
        if not is_sha256_hex(sha) or sha != facts.sha256:
            raise CacheError(f"wheel facts for {facts.filename} carry no valid lower-case sha256")
        if self.readonly:
            return
        self._write(entries.facts_path(self.root, sha, rules), entries.encode_facts(facts))

    def load_summary(
        self, sha256: str, *, allow_partial: bool = False, allow_unverified: bool = False, rules: str = ""
    ) -> WheelSummary | None:
        """The wheel's summary (metadata, files, needed sonames), or None on a miss or a damaged entry;
        the summary of partial facts counts as a miss unless ``allow_partial``, of unverified facts
        unless ``allow_unverified`` (as in ``load_facts``)."""
        sha = sha256.lower()
        if not is_sha256_hex(sha):
            return None
        path = entries.summary_path(self.root, sha, rules)
        data = self._read(path)
        if data is None:
            return None
        summary = self._decode(path, data, lambda d: entries.decode_summary(d, sha))
        if summary is None or (summary.partial and not allow_partial):
            return None
        return summary if summary.verified or allow_unverified else None

    def summarized_wheels(self) -> list[str]:
        """The sha256 of every wheel with a stored summary, sorted: what ``load_summary`` may answer for
        (a listing of the entries, none of them read)."""
        found = (self.root / entries.FACTS_DIR).glob(f"*/*{entries.SUMMARY_SUFFIX}")
        shas = (entries.entry_name(p, entries.SUMMARY_SUFFIX) for p in found)
        return sorted(s for s in shas if is_sha256_hex(s))

    def facts_verified(self, sha256: str, *, rules: str = "") -> bool | None:
        """Whether the stored facts of ``sha256`` were checked against it, from the entry's header alone;
        None when none are stored (or the entry is damaged or of another schema)."""
        sha = sha256.lower()
        if not is_sha256_hex(sha):
            return None
        header = entries.facts_header(entries.facts_path(self.root, sha, rules), sha)
        return None if header is None else header.get("verified") is True

    def facts_published(self, sha256: str) -> bool:
        """Whether the stored facts of ``sha256`` came from published facts (``abiprobe.store.published``)."""
        sha = sha256.lower()
        header = entries.facts_header(entries.facts_path(self.root, sha), sha) if is_sha256_hex(sha) else None
        return header is not None and header.get("published") is True

    def store_published_facts(self, facts: WheelFacts, entry: bytes) -> None:
        """Keep a publisher's facts ``entry`` as it came, once the caller decoded it to ``facts`` for the
        sha256 its own index lists; complete, verified facts already stored are kept as they are."""
        sha = facts.sha256
        if self.readonly or not is_sha256_hex(sha) or not facts.verified:
            return
        if not entries.facts_entry_is_current(entries.facts_path(self.root, sha), sha):
            self._write(entries.facts_path(self.root, sha), entry)
        self.store_summary(facts.summary())

    def store_summary(self, summary: WheelSummary, *, rules: str = "") -> None:
        sha = summary.sha256.lower()
        if self.readonly or not is_sha256_hex(sha) or sha != summary.sha256:
            return
        path = entries.summary_path(self.root, sha, rules)
        # missing, damaged, of another version, or of other (partial) facts
        stored = self.load_summary(sha, allow_partial=True, allow_unverified=True, rules=rules)
        if not path.exists() or stored != summary:
            self._write(path, entries.encode_summary(summary))

    # analysis results, keyed by a digest of everything they depend on (see abiprobe.solve.evaluate)

    def load_analysis(self, key: str) -> list[dict[str, Any]] | None:
        """Stored verdicts (as JSON objects) for ``key``, or None on a miss or a damaged entry."""
        if not is_sha256_hex(key):
            return None
        path = entries.analysis_path(self.root, key)
        data = self._read(path)
        if data is None:
            return None
        return self._decode(path, data, lambda d: entries.decode_analysis(d, key))

    def store_analysis(self, key: str, verdicts: list[dict[str, Any]]) -> None:
        if self.readonly or not is_sha256_hex(key):
            return
        self._write(entries.analysis_path(self.root, key), entries.encode_analysis(key, verdicts))

    # PEP 658 metadata

    def load_metadata(self, key: str) -> bytes | None:
        """Verified core metadata stored under a wheel sha256 or a URL, or None on a miss or a damaged
        entry; metadata range-read from an unhashed wheel only through ``load_metadata_entry``."""
        entry = self.load_metadata_entry(key)
        return entry.data if entry is not None and entry.directory_sha256 is None else None

    def load_metadata_entry(self, key: str) -> MetadataEntry | None:
        """The stored metadata with how it was read (see ``MetadataEntry``), or None."""
        normal = self._metadata_key(key)
        path = entries.metadata_path(self.root, normal)
        data = self._read(path)
        if data is None:
            return None
        name = entries.metadata_name(normal)
        return self._decode(path, data, lambda d: entries.decode_metadata(d, name))

    def store_metadata(
        self, key: str, data: bytes, *, directory_sha256: str | None = None, wheel_sha256: str | None = None
    ) -> None:
        if self.readonly:
            return
        normal = self._metadata_key(key)
        encoded = entries.encode_metadata(normal, bytes(data), directory_sha256, wheel_sha256)
        self._write(entries.metadata_path(self.root, normal), encoded)

    @staticmethod
    def _metadata_key(key: str) -> str:
        return key.lower() if is_sha256_hex(key.lower()) else strip_credentials(key)

    # per-host notes

    def host_note(self, where: str, key: str) -> object | None:
        """A note the network layer left about the host of ``where`` (a URL or a host name), e.g. that
        it ignores range requests."""
        return self._host_notes().get(neutral(host_key(where)), {}).get(key)

    def set_host_note(self, where: str, key: str, value: object) -> None:
        """Remember a JSON-serialisable ``value`` about the host of ``where``; None forgets the note."""
        if self.readonly:
            return
        try:
            pretty_json(value)
        except (TypeError, ValueError) as exc:
            raise CacheError(f"host note {key!r} for {host_key(where)} is not JSON-serialisable") from exc
        with self.lock():
            notes = self._host_notes()
            host_notes = dict(notes.get(neutral(host_key(where)), {}))
            if value is None:
                host_notes.pop(key, None)
            else:
                host_notes[key] = value
            if host_notes:
                notes[neutral(host_key(where))] = host_notes
            else:
                notes.pop(neutral(host_key(where)), None)
            self._write(self.root / entries.HOSTS_FILE, entries.encode_hosts(notes))

    def _host_notes(self) -> dict[str, dict[str, Any]]:
        path = self.root / entries.HOSTS_FILE
        data = self._read(path)
        if data is None:
            return {}
        return self._decode(path, data, entries.decode_hosts) or {}

    # concurrency and maintenance

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """Exclusive across processes (flock on ``<root>/.lock``), reentrant within this process."""
        if self.readonly:
            return contextlib.nullcontext()
        return exclusive_lock(self.root / entries.LOCK_FILE)

    def info(self) -> CacheInfo:
        return collect_info(self.root, readonly=self.readonly)

    def verify(self, *, repair: bool = False) -> VerifyReport:
        """Decode every entry; with ``repair`` delete damaged ones, orphan bodies and leftover temp files."""
        if repair and self.readonly:
            raise CacheError(f"cannot repair the read-only cache at {self.root}")
        if not repair:
            return verify_cache(self.root, repair=False, now=time.time())
        with self.lock():
            return verify_cache(self.root, repair=True, now=time.time())

    def prune(
        self, *, older_than_days: float | None = None, pages: bool = True, facts: bool = False
    ) -> PruneReport:
        """Delete pages (and with ``facts`` also facts and metadata) older than the given age, or all."""
        if self.readonly:
            raise CacheError(f"cannot prune the read-only cache at {self.root}")
        with self.lock():
            return prune_cache(
                self.root, older_than_days=older_than_days, pages=pages, facts=facts, now=time.time()
            )

    # plumbing

    def _read(self, path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except OSError:
            return None

    def _decode(self, path: Path, data: bytes, decoder: Callable[[bytes], T]) -> T | None:
        """``decoder(data)``, or None after dropping a damaged entry (a foreign one is left in place)."""
        try:
            return decoder(data)
        except ForeignSchemaError:
            return None
        except CorruptEntryError:
            self._drop(path, data)
            return None

    def _drop(self, path: Path, seen: bytes) -> None:
        """Delete a damaged entry unless a writer replaced it since we read it."""
        if self.readonly:
            return
        with contextlib.suppress(CacheError), self.lock():
            if self._read(path) == seen:
                remove_quietly(path)

    def _write(self, path: Path, data: bytes) -> None:
        if not self._prepared:
            self._prepare()
        try:
            atomic_write(path, data)
        except OSError as exc:
            raise CacheError(f"cannot write to the cache at {self.root}: {exc.strerror or exc}") from exc

    def _prepare(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            ignore = self.root / entries.GITIGNORE_FILE
            if not ignore.exists():
                atomic_write(ignore, entries.GITIGNORE_TEXT)
        except OSError as exc:
            raise CacheError(f"cannot create the cache at {self.root}: {exc.strerror or exc}") from exc
        self._prepared = True


__all__ = [
    "Cache",
    "CacheInfo",
    "CacheProblem",
    "CachedPage",
    "KindStats",
    "MetadataEntry",
    "PruneReport",
    "StalePage",
    "VerifyReport",
    "default_cache_root",
    "is_stale",
    "strip_credentials",
]
