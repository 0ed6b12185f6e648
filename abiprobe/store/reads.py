"""The one cache-first read: every path that wants what a wheel says (its facts, its summary, its METADATA),
listed on an index or on local disk, reads it here.

The policy (:func:`cache_first`), the same for each: look in the cache and use what is there when it may
answer; offline, a miss is ``NotCachedError`` (one line, exit status 3: the answer is unknown, as when an
index cannot be read); otherwise read through the reader, store what was read (each entry written
atomically) and return it.

What may answer:

- Facts stored under a sha256 were checked against it (the file hashed whole): they always answer.
- Facts range-read from a file that was not hashed whole are *unverified*: kept with the sha256 of the
  central directory they were read through, they answer while the index lists the file as before this run
  or the server still serves that directory (one tail request per file and run), and offline as stored:
  ``abiprobe.store.trust``, under the run's ``Freshness``.
- A wheel listed without a sha256 is hashed whole when its facts are read (a lock needs its true sha256,
  and facts are stored under a checked one only); the entry its URL keeps (its METADATA and the central
  directory) then names that sha256, so the next read finds the facts. That binding of URL to bytes
  answers as unverified facts do. Its METADATA alone is range-read, kept the same way; a URL whose server
  ignores ranges (no directory to bind to) is kept nothing for.
- A local wheel is hashed (its sha256 remembered by the file's identity): its stored facts always answer.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from abiprobe.binary.objects import looks_like_binary_member
from abiprobe.binary.wheel import select_members
from abiprobe.binary.wheel_members import dist_info_dir, installed_path
from abiprobe.errors import NotCachedError, WheelFormatError
from abiprobe.model.candidate import IndexFile
from abiprobe.model.facts import WheelFacts, WheelInfo, WheelSummary
from abiprobe.net.http import Http
from abiprobe.net.remote_wheel import RemoteZip
from abiprobe.store.cache import Cache, MetadataEntry
from abiprobe.store.localstate import local_sha256
from abiprobe.store.python_rules import local_current, remote_current
from abiprobe.store.trust import Freshness, ServedDirectories, Trust, never_listed_before

if TYPE_CHECKING:
    from abiprobe.store.published_client import PublishedFacts

T = TypeVar("T")


def cache_first(
    lookup: Callable[[], T | None],
    read: Callable[[], T],
    store: Callable[[T], None],
    *,
    offline: bool,
    missing: Callable[[], str],
) -> T:
    """What ``lookup`` finds that may answer; else, offline, ``NotCachedError(missing())``; else what
    ``read`` reads, once ``store`` has kept it."""
    hit = lookup()
    if hit is not None:
        return hit
    if offline:
        raise NotCachedError(missing())
    got = read()
    store(got)
    return got


def stored_facts(cache: Cache, sha256: str) -> WheelFacts | None:
    """Complete facts stored under ``sha256``, as an offline read takes them (unverified ones as stored)."""
    return cache.load_facts(sha256, allow_unverified=True)


def stored_summary(cache: Cache, sha256: str) -> WheelSummary | None:
    """The summary of complete facts stored under ``sha256``, as an offline read takes it."""
    return cache.load_summary(sha256, allow_unverified=True)


@dataclass(frozen=True)
class _Read:
    """What one read of a listed wheel gave: its facts and, for a wheel listed without a sha256, the entry
    its URL keeps (its METADATA, and the central directory it was read through)."""

    facts: WheelFacts
    url_entry: MetadataEntry | None = None


@dataclass(frozen=True)
class WheelReads:
    """The read-through store of one run: what a listed wheel says, and what a run derives from wheels.

    ``http`` for range reads, ``cache`` (None: nothing is kept), ``offline`` (the cache alone answers: a
    miss is ``NotCachedError``), ``published`` (facts fetched, where the cache has none, before a wheel is
    read: ``abiprobe.store.published_client``), ``listed_as_before`` (the index client's answer: a file
    listed as before this run; an explicit input of the freshness policy) and ``directories`` (the zip
    directories served this run, shared with the revalidation that asks for them before a solve). What
    may answer is :attr:`trust`'s rule; what a run derives is kept by :meth:`memoized`. ``preloaded`` (the
    installed paths of the libraries the stack's packages preload,
    ``abiprobe.analyze.preloads.preload_pattern``: of a runtime wheel only those are read for their GPU
    code, the only ones a GPU-code verdict looks at). ``unread_sources`` (the packages whose Python sources a
    read leaves out, ``Stack.unread_sources()``): facts read under other rules than the built-in stack's
    are kept apart, under :attr:`rules` (:func:`read_rules_key`), and published facts, read under the
    built-in ones, do not answer for them."""

    http: Http
    cache: Cache | None
    offline: bool = False
    published: PublishedFacts | None = None
    listed_as_before: Callable[[IndexFile], bool] = never_listed_before
    directories: ServedDirectories | None = None
    preloaded: re.Pattern[str] = field(kw_only=True)
    unread_sources: frozenset[str] = field(kw_only=True)
    trust: Trust = field(init=False)
    rules: str = field(init=False)
    _local: LocalFacts = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        directories = self.directories or ServedDirectories(self.http, self.cache)
        freshness = Freshness(self.offline, self.http.verify_wheels, self.listed_as_before)
        object.__setattr__(self, "directories", directories)
        object.__setattr__(self, "trust", Trust(freshness, directories))
        object.__setattr__(self, "rules", read_rules_key(self.unread_sources))
        object.__setattr__(self, "_local", LocalFacts(self.cache, unread_sources=self.unread_sources))

    def _no_gpu_verdict(self, path: str) -> bool:
        """Whether no GPU-code verdict looks at the runtime library installed at ``path``: only the units
        (libraries the stack's packages preload) are judged for their GPU code, what they need is not."""
        return not self.preloaded.match(path)

    # what may answer

    def _trusted(self, entry: WheelFacts | WheelSummary, file: IndexFile) -> bool:
        return self.trust.facts_answer(entry, file)

    def _bound(self, entry: MetadataEntry, file: IndexFile) -> bool:
        """Whether an entry kept by ``file``'s URL or sha256 answers for it."""
        return self.trust.entry_answers(entry.directory_sha256, file)

    def _through(self, lookup: Callable[[], T | None], read: Callable[[], T], keep: Callable[[T], None],
                 missing: Callable[[], str]) -> T:  # fmt: skip
        return cache_first(lookup, read, keep, offline=self.offline, missing=missing)

    def _remote(self, file: IndexFile) -> AbstractContextManager[RemoteZip]:
        assert self.directories is not None
        return self.directories.open(file)

    # what a run derives from wheels (stored verdicts, install closures): the one memo rule

    def memoized(
        self,
        key: str | None,
        compute: Callable[[], T],
        encode: Callable[[T], list[dict[str, Any]] | None],
        decode: Callable[[list[dict[str, Any]]], T | None],
    ) -> T:
        """What is stored under ``key`` (the cache's, else the published one), when ``decode`` takes it
        (None: stale or damaged); else ``compute``'s value, kept as ``encode`` gives it (None: not kept).
        Without a key nothing is looked up or kept."""
        if key is not None:
            stored = self.cache.load_analysis(key) if self.cache is not None else None
            if stored is None and self.published is not None:
                stored = self.published.fetch_analysis(key)
            hit = decode(stored) if stored is not None else None
            if hit is not None:
                return hit
        value = compute()
        doc = encode(value) if key is not None else None
        if key is not None and doc is not None and self.cache is not None:
            self.cache.store_analysis(key, doc)
        return value

    def _url_entry(self, file: IndexFile) -> MetadataEntry | None:
        """The entry a wheel listed without a sha256 keeps by URL, when it still answers for it."""
        if self.cache is None or file.sha256:
            return None
        entry = self.cache.load_metadata_entry(file.url)
        return entry if entry is not None and self._bound(entry, file) else None

    def sha256_of(self, file: IndexFile) -> str | None:
        """The sha256 ``file``'s facts are stored under: the index's, else the one its URL's bytes had
        when they were hashed whole (while the server still serves them)."""
        if file.sha256:
            return file.sha256
        entry = self._url_entry(file)
        return entry.wheel_sha256 if entry is not None else None

    def _stored(self, file: IndexFile, *, partial: bool = False) -> WheelFacts | None:
        sha = self.sha256_of(file)
        if self.cache is None or sha is None:
            return None
        if self._published is not None:
            self._published.fetch_facts(file)
        hit = self.cache.load_facts(sha, allow_partial=partial, allow_unverified=True, rules=self.rules)
        if hit is None or not self._trusted(hit, file):
            return None
        return self._current(hit, file)

    def _current(self, facts: WheelFacts, file: IndexFile) -> WheelFacts:
        """Stored facts with their Python read again when it was read under older rules."""
        return remote_current(
            facts,
            file,
            self.http,
            self.cache,
            offline=self.offline,
            unread_sources=self.unread_sources,
            rules=self.rules,
        )

    def _stored_summary(self, file: IndexFile, *, partial: bool = False) -> WheelSummary | None:
        sha = self.sha256_of(file)
        if self.cache is None or sha is None:
            return None
        hit = self.cache.load_summary(sha, allow_partial=partial, allow_unverified=True, rules=self.rules)
        return hit if hit is not None and self._trusted(hit, file) else None

    def _like(self, summary: WheelSummary, file: IndexFile | None = None) -> WheelFacts | None:
        """The full facts a trusted summary was made from (read through the same directory), else None;
        with published facts, those of ``file``'s summary fetched first, and read from the wheel when they
        cannot be had (a published summary may come without its facts)."""
        if self.cache is None:
            return None
        if file is not None and self._published is not None:
            self._published.fetch_facts(file)
        facts = self._local.stored(summary)
        if facts is not None:
            return self._current(facts, file) if file is not None else facts
        return self.facts(file) if file is not None and self._published is not None else None

    def holds(self, file: IndexFile) -> bool:
        """Whether the cache holds complete facts of ``file`` as an offline read takes them (a preference
        among candidates: whether they still answer online is asked when they are read)."""
        sha = self.sha256_of(file)
        if self.cache is None or sha is None:
            return False
        return self.cache.load_summary(sha, allow_unverified=True, rules=self.rules) is not None

    @property
    def _published(self) -> PublishedFacts | None:
        """Published facts where they may answer: for reads under the built-in stack's rules."""
        return self.published if not self.rules else None

    def _missing(self, file: IndexFile) -> str:
        """The line an offline miss says: what is missing, and what a partial entry lacks."""
        partial = self._stored(file, partial=True)
        if partial is None:
            return f"{file.filename}: not in the cache, and --offline forbids fetching it"
        gpu = sum(e.gpu_unread for e in partial.elf)
        tables = f", {gpu} of them only up to their loader tables" if gpu else ""
        return (
            f"{file.filename}: only partly in the cache (a solve read {len(partial.elf)} of its "
            f"{len(partial.elf) + len(partial.unread)} libraries{tables}), and --offline forbids fetching "
            "the rest"
        )

    # reading and keeping

    def _read(
        self,
        file: IndexFile,
        read: Callable[[str], bool] | None = None,
        tables_only: Callable[[str], bool] | None = None,
    ) -> _Read:
        """A range read of ``file`` (``RemoteZip.facts``); one listed without a sha256 is hashed whole, and
        its METADATA read once more (a few kB) for the entry its URL keeps."""
        with self._remote(file) as remote:
            if file.duplicate:
                # listed again with other hashes: only the whole file's sha256 says which listing it is
                remote.open_full()
            facts = remote.facts(
                file.filename, file.sha256, read, tables_only=tables_only, unread_sources=self.unread_sources
            )
            directory = remote.directory_sha256
            if file.sha256 or directory is None or not facts.verified:
                return _Read(facts)
            member = f"{dist_info_dir(remote.names())}/METADATA"
            metadata = remote.read_members([member])[member].read()
        return _Read(facts, MetadataEntry(file.url, metadata, directory, facts.sha256))

    def _keep(self, got: _Read) -> None:
        if self.cache is None or not got.facts.sha256:
            return
        self.cache.store_facts(got.facts, rules=self.rules)
        entry = got.url_entry
        if entry is not None:
            self.cache.store_metadata(
                entry.key,
                entry.data,
                directory_sha256=entry.directory_sha256,
                wheel_sha256=entry.wheel_sha256,
            )

    def _keep_summary(self, facts: WheelFacts) -> WheelSummary:
        """``facts``' summary, stored."""
        summary = facts.summary()
        if self.cache is not None and facts.sha256:
            self.cache.store_summary(summary, rules=self.rules)
        return summary

    def _published_first(self, file: IndexFile) -> None:
        if self._published is not None:
            self._published.fetch_summary(file)

    # the reads

    def facts(self, file: IndexFile) -> WheelFacts:
        """Complete facts of a listed wheel."""
        self._published_first(file)
        return self._through(
            lambda: _Read(hit) if (hit := self._stored(file)) is not None else None,
            lambda: self._read(file),
            self._keep,
            lambda: self._missing(file),
        ).facts

    def info(self, file: IndexFile) -> WheelInfo:
        """The stored summary when there is one (full facts loaded on first use); else the full facts."""
        self._published_first(file)
        summary = self._stored_summary(file)
        if summary is not None:
            return self._lazy(summary, file)
        facts = self.facts(file)
        summary = self._keep_summary(facts)  # stored facts whose summary went missing get it back
        return self._held_lightly(facts, summary)

    def _lazy(self, summary: WheelSummary, file: IndexFile | None = None) -> WheelInfo:
        """A stored summary, its full facts loaded from the cache on first use (:meth:`full`)."""
        return WheelInfo(summary, origin=file)

    def full(self, info: WheelInfo) -> WheelFacts | None:
        """The ``abiprobe.solve.ports.FullFacts`` port: the full facts behind ``info``'s summary, loaded
        once (from the cache; with published facts, those of its listed file fetched first)."""
        origin = info.origin
        if info.held is not None or isinstance(origin, Path):
            return self._local.full(info)
        return self._local.loaded(info, lambda: self._like(info.summary, origin))

    def _held_lightly(self, facts: WheelFacts, summary: WheelSummary) -> WheelInfo:
        """``facts`` just read, as their ``summary`` with the full facts loaded from the cache on first
        use: a solve over every release reads a few hundred wheels before it analyses any, and holding
        all their symbol tables at once cost gigabytes. Kept in memory where the cache does not hold them."""
        if self.cache is None or self.cache.readonly or facts.partial:
            return WheelInfo.of(facts)
        # the entry holds these very facts, or (kept as it was) complete ones checked against the same sha256
        if self.cache.facts_verified(facts.sha256, rules=self.rules) is not facts.verified:
            return WheelInfo.of(facts)
        return self._lazy(summary)

    def runtime_info(self, file: IndexFile, read: Callable[[str], bool]) -> WheelInfo:
        """A runtime wheel's facts with at least the binaries ``read`` accepts (installed paths) read.

        The loader reaches a few libraries of a runtime wheel (cuDNN's loader, not its dlopen'd engines), so
        a cold solve fetches only those members; what is known already is reused, and what is learned is
        merged into the stored (partial) facts. Complete facts, when stored, serve every ``read``."""
        known: WheelFacts | None = None
        learned: MetadataEntry | None = None
        self._published_first(file)

        def lookup() -> WheelInfo | None:
            nonlocal known
            summary = self._stored_summary(file, partial=True)
            if summary is not None and not any(read(p) for p in summary.unread):
                return self._lazy(summary, file)
            known = self._stored(file, partial=True)
            if known is not None and not any(read(p) for p in known.unread):
                self._keep_summary(known)
                return WheelInfo.of(known)
            return None

        def through() -> WheelInfo:
            nonlocal learned
            wanted = set(known.unread) if known is not None else None
            got = self._read(
                file, lambda p: read(p) and (wanted is None or p in wanted), self._no_gpu_verdict
            )
            facts, learned = got.facts, got.url_entry
            # what was known is kept unless the server changed the file between the two reads
            if known is not None and known.directory_sha256 in (None, facts.directory_sha256):
                facts = known.merged(facts)
            return WheelInfo.of(facts)

        def keep(info: WheelInfo) -> None:
            if info.held is not None:
                self._keep(_Read(info.held, learned))

        return self._through(lookup, through, keep, lambda: self._missing(file))

    def variant_info(self, file: IndexFile) -> WheelInfo | None:
        """What is stored of ``file``, else its facts with only its smallest library read (and its
        dist-info and Python files), kept as partial facts: enough to tell a CUDA major the library's
        sonames name (:meth:`abiprobe.solve.collect.Collector.declared_variant`) for a few kB of a
        possibly huge wheel. A later read of the whole wheel replaces them. None (nothing more read than
        its zip directory) where that would not save much: no library, or one that is most of the wheel.
        Offline, only what is stored."""
        self._published_first(file)

        def lookup() -> WheelInfo | None:
            summary = self._stored_summary(file, partial=True)
            return self._lazy(summary, file) if summary is not None else None

        def keep(info: WheelInfo | None) -> None:
            if info is not None and info.held is not None:
                self._keep(_Read(info.held))

        try:
            return self._through(lookup, lambda: self._smallest_library(file), keep, lambda: "")
        except NotCachedError:
            return None

    def _smallest_library(self, file: IndexFile) -> WheelInfo | None:
        """``file``'s facts with only its smallest library read, where that saves most of the wheel."""
        with self._remote(file) as remote:
            sizes = remote.compressed_sizes()
            binaries = sorted((n, name) for name, n in sizes.items() if looks_like_binary_member(name))
            if not binaries:
                return None
            smallest = installed_path(binaries[0][1])
            only = lambda p: p == smallest  # noqa: E731
            picked = select_members(list(sizes), only, unread_sources=self.unread_sources)
            cost = sum(sizes[n] for n in picked)
            if 2 * cost > sum(sizes.values()):
                return None
            return WheelInfo.of(
                remote.facts(file.filename, file.sha256, only, unread_sources=self.unread_sources)
            )

    def metadata(self, file: IndexFile) -> bytes:
        """A wheel's METADATA when its index offers no PEP 658 file: one member read from the wheel (a few
        kB of a possibly huge file), kept under the wheel's sha256, or its URL when it is listed without."""
        key = file.sha256 or file.url
        published = self.published.metadata_of(file) if self.published is not None else None

        def lookup() -> MetadataEntry | None:
            entry = self.cache.load_metadata_entry(key) if self.cache is not None else None
            if entry is not None and self._bound(entry, file):
                return entry
            return MetadataEntry(key, published) if published is not None else None

        def through() -> MetadataEntry:
            with self._remote(file) as remote:
                member = f"{dist_info_dir(remote.names())}/METADATA"
                verify = file.sha256 is not None and remote.should_verify([member])
                data = remote.read_members([member], verify=verify)[member].read()
                checked = remote.sha256 is not None and file.sha256 is not None
                return MetadataEntry(key, data, None if checked else remote.directory_sha256)

        def keep(entry: MetadataEntry) -> None:
            if self.cache is None or (entry.directory_sha256 is None and not file.sha256):
                return  # a URL whose server ignores ranges: no directory to bind its bytes to
            self.cache.store_metadata(key, entry.data, directory_sha256=entry.directory_sha256)

        missing = f"{file.filename}: its METADATA is not in the cache, and --offline forbids fetching it"
        return self._through(lookup, through, keep, lambda: missing).data


# local wheels: always hashed, so their stored facts always answer; nothing to be offline about


class LocalFacts:
    """The ``abiprobe.solve.ports.FullFacts`` port over one cache, for local wheels and stored entries:
    the full facts behind a summary, loaded once per summary (from the cache; a local wheel whose entry
    went missing or was damaged behind its summary is read again, and stored)."""

    def __init__(self, cache: Cache | None, *, unread_sources: frozenset[str]) -> None:
        self.cache = cache
        self.unread_sources = unread_sources
        self.rules = read_rules_key(unread_sources)
        self._loaded: dict[tuple[object, ...], WheelFacts | None] = {}
        self._lock = threading.Lock()

    def full(self, info: WheelInfo) -> WheelFacts | None:
        if info.held is not None:
            return info.held
        origin = info.origin
        if isinstance(origin, Path):
            return self.loaded(info, lambda: self._local(info.summary, origin))
        return self.loaded(info, lambda: self.stored(info.summary))

    def loaded(self, info: WheelInfo, load: Callable[[], WheelFacts | None]) -> WheelFacts | None:
        """What ``load`` gave for a summary like ``info``'s, loaded the first time it is asked for (the
        same wheel, read as far and through the same directory, has the same full facts)."""
        s = info.summary
        key = (s.sha256, s.directory_sha256, s.verified, s.unread, s.gpu_unread)
        with self._lock:
            if key in self._loaded:
                return self._loaded[key]
        got = load()
        with self._lock:
            return self._loaded.setdefault(key, got)

    def stored(self, summary: WheelSummary) -> WheelFacts | None:
        """The full facts a summary was made from (read as far, through the same directory), else None."""
        if self.cache is None:
            return None
        facts = self.cache.load_facts(
            summary.sha256, allow_partial=summary.partial, allow_unverified=True, rules=self.rules
        )
        same = facts is not None and facts.directory_sha256 == summary.directory_sha256
        return facts if same and facts is not None and facts.verified == summary.verified else None

    def _local(self, summary: WheelSummary, path: Path) -> WheelFacts:
        store = self.cache if self.cache is not None else Cache()
        hit = store.load_facts(summary.sha256, rules=self.rules)
        if hit is not None:
            return local_current(hit, path, store, unread_sources=self.unread_sources, rules=self.rules)
        facts = _local_facts(path, summary.sha256, self.unread_sources)
        store.store_facts(facts, rules=self.rules)
        return facts


def _local_digest(path: Path) -> str:
    try:
        return local_sha256(path)
    except OSError as exc:
        raise WheelFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None


def stored_local_summary(path: Path, cache: Cache | None = None) -> WheelSummary | None:
    """A local wheel's stored summary, or None (nothing is read but its sha256, remembered)."""
    try:
        digest = local_sha256(path)
    except OSError:
        return None
    return (cache if cache is not None else Cache()).load_summary(digest)


def local_wheel_info(path: Path, cache: Cache | None = None, *, unread_sources: frozenset[str]) -> WheelInfo:
    """A local wheel's summary, its full facts loaded on first use through :class:`LocalFacts` (both from
    the cache when there, read from the file and stored when not; ``unread_sources`` as
    :class:`WheelReads` takes them)."""
    store = cache if cache is not None else Cache()
    digest = _local_digest(path)
    rules = read_rules_key(unread_sources)

    def current(facts: WheelFacts | None) -> WheelFacts | None:
        return (
            None
            if facts is None
            else local_current(facts, path, store, unread_sources=unread_sources, rules=rules)
        )

    def lookup() -> WheelInfo | None:
        summary = store.load_summary(digest, rules=rules)
        if summary is not None:
            return WheelInfo(summary, origin=path)
        hit = current(store.load_facts(digest, rules=rules))
        if hit is not None:
            store.store_summary(hit.summary(), rules=rules)
        return WheelInfo.of(hit) if hit is not None else None

    def read() -> WheelInfo:
        return WheelInfo.of(_local_facts(path, digest, unread_sources))

    def keep(info: WheelInfo) -> None:
        if info.held is not None:
            store.store_facts(info.held, rules=rules)

    return cache_first(lookup, read, keep, offline=False, missing=lambda: "")


def cached_wheel_facts(
    path: Path, cache: Cache | None = None, *, unread_sources: frozenset[str]
) -> WheelFacts:
    """Facts of a local wheel, cache first (see :func:`local_wheel_info`)."""
    info = local_wheel_info(path, cache, unread_sources=unread_sources)
    facts = LocalFacts(cache, unread_sources=unread_sources).full(info)
    assert facts is not None  # read from the file when the cache has none
    return facts


def _local_facts(path: Path, digest: str, unread_sources: frozenset[str]) -> WheelFacts:
    from abiprobe.binary.wheel import wheel_facts_from_path

    return wheel_facts_from_path(path, known_sha256=digest, unread_sources=unread_sources)


@functools.cache
def _built_in_unread_sources() -> frozenset[str]:
    from abiprobe.model.stack import default_stack

    return default_stack().unread_sources()


def read_rules_key(unread_sources: frozenset[str]) -> str:
    """The part of a stored facts entry's key that names the read rules they were read under: empty for
    the built-in stack's (the entries stored before rules were in the key, the committed cache's), else
    a digest of the rules (which packages' Python sources a read leaves out). Facts are stored forever by
    sha256; read under other rules they would answer for the built-in ones, or the other way round."""
    if unread_sources == _built_in_unread_sources():
        return ""
    text = json.dumps({"unread_sources": sorted(unread_sources)})
    return hashlib.sha256(text.encode()).hexdigest()[:16]
