"""The one cache-first read: every path that wants what a wheel says (its facts, its summary, its METADATA),
listed on an index or on local disk, reads it here.

The policy (:func:`cache_first`), the same for each: look in the cache and use what is there when it may
answer; offline, a miss is ``NotCachedError`` (one line, exit status 3: the answer is unknown, as when an
index cannot be read); otherwise read through the reader, store what was read (each entry written
atomically) and return it.

What may answer:

- Facts stored under a sha256 were checked against it (the file hashed whole): they always answer.
- Facts range-read from a file that was not hashed whole are *unverified*: kept with the sha256 of the
  central directory they were read through, they answer while the server still serves that directory (one
  tail request per file and run, ``abiprobe.net.remote_wheel.trusted``), and offline as stored.
- A wheel listed without a sha256 is hashed whole when its facts are read (a lock needs its true sha256,
  and facts are stored under a checked one only); the entry its URL keeps (its METADATA and the central
  directory) then names that sha256, so the next read finds the facts. That binding of URL to bytes
  answers as unverified facts do. Its METADATA alone is range-read, kept the same way; a URL whose server
  ignores ranges (no directory to bind to) is kept nothing for.
- A local wheel is hashed (its sha256 remembered by the file's identity): its stored facts always answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from abiprobe.binary.objects import looks_like_binary_member
from abiprobe.binary.wheel_members import dist_info_dir, installed_path
from abiprobe.errors import NotCachedError, WheelFormatError
from abiprobe.host.wheel import select_members
from abiprobe.model.candidate import IndexFile
from abiprobe.model.facts import WheelFacts, WheelInfo, WheelSummary
from abiprobe.net.http import Http
from abiprobe.net.remote_wheel import RemoteZip, listed_unchanged, served_directory, trusted
from abiprobe.store.cache import Cache, MetadataEntry
from abiprobe.store.localstate import local_sha256
from abiprobe.store.python_rules import local_current, remote_current

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
    """The reads of listed wheels for one run: ``http`` for range reads, ``cache`` (None: nothing is kept),
    ``offline`` (the cache alone answers), ``published`` (facts fetched, where the cache has none, before
    a wheel is read: ``abiprobe.store.published_client``)."""

    http: Http
    cache: Cache | None
    offline: bool = False
    published: PublishedFacts | None = None

    # what may answer

    def _trusted(self, entry: WheelFacts | WheelSummary, file: IndexFile) -> bool:
        return trusted(entry, self.http, file, self.cache, offline=self.offline)

    def _bound(self, entry: MetadataEntry, file: IndexFile) -> bool:
        """Whether an entry kept by ``file``'s URL or sha256 answers for it: checked against the sha256,
        or read through a central directory the index still vouches for (the wheel listed as before this
        run) or the server still serves (offline: as stored)."""
        recorded = entry.directory_sha256
        if recorded is None or self.offline or listed_unchanged(self.http, file):
            return True
        return recorded == served_directory(self.http, file, self.cache)

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
        if self.published is not None:
            self.published.fetch_facts(file)
        hit = self.cache.load_facts(sha, allow_partial=partial, allow_unverified=True)
        if hit is None or not self._trusted(hit, file):
            return None
        return self._current(hit, file)

    def _current(self, facts: WheelFacts, file: IndexFile) -> WheelFacts:
        """Stored facts with their Python read again when it was read under older rules."""
        return remote_current(facts, file, self.http, self.cache, offline=self.offline)

    def _stored_summary(self, file: IndexFile, *, partial: bool = False) -> WheelSummary | None:
        sha = self.sha256_of(file)
        if self.cache is None or sha is None:
            return None
        hit = self.cache.load_summary(sha, allow_partial=partial, allow_unverified=True)
        return hit if hit is not None and self._trusted(hit, file) else None

    def _like(self, summary: WheelSummary, file: IndexFile | None = None) -> WheelFacts | None:
        """The full facts a trusted summary was made from (read through the same directory), else None;
        with published facts, those of ``file``'s summary fetched first, and read from the wheel when they
        cannot be had (a published summary may come without its facts)."""
        if self.cache is None:
            return None
        if file is not None and self.published is not None:
            self.published.fetch_facts(file)
        facts = self.cache.load_facts(summary.sha256, allow_partial=summary.partial, allow_unverified=True)
        same = facts is not None and facts.directory_sha256 == summary.directory_sha256
        if same and facts is not None and facts.verified == summary.verified:
            return self._current(facts, file) if file is not None else facts
        return self.facts(file) if file is not None and self.published is not None else None

    def holds(self, file: IndexFile) -> bool:
        """Whether the cache holds complete facts of ``file`` as an offline read takes them (a preference
        among candidates: whether they still answer online is asked when they are read)."""
        sha = self.sha256_of(file)
        return self.cache is not None and sha is not None and stored_summary(self.cache, sha) is not None

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
        with RemoteZip(self.http, file.url, file.sha256, file.size, self.cache) as remote:
            if file.duplicate:
                # listed again with other hashes: only the whole file's sha256 says which listing it is
                remote.open_full()
            facts = remote.facts(file.filename, file.sha256, read, tables_only=tables_only)
            directory = remote.directory_sha256
            if file.sha256 or directory is None or not facts.verified:
                return _Read(facts)
            member = f"{dist_info_dir(remote.names())}/METADATA"
            metadata = remote.read_members([member])[member].read()
        return _Read(facts, MetadataEntry(file.url, metadata, directory, facts.sha256))

    def _keep(self, got: _Read) -> None:
        if self.cache is None or not got.facts.sha256:
            return
        self.cache.store_facts(got.facts)
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
            self.cache.store_summary(summary)
        return summary

    def _published_first(self, file: IndexFile) -> None:
        if self.published is not None:
            self.published.fetch_summary(file)

    # the reads

    def facts(self, file: IndexFile) -> WheelFacts:
        """Complete facts of a listed wheel."""
        self._published_first(file)
        return cache_first(
            lambda: _Read(hit) if (hit := self._stored(file)) is not None else None,
            lambda: self._read(file),
            self._keep,
            offline=self.offline,
            missing=lambda: self._missing(file),
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
        """A stored summary, its full facts loaded from the cache on first use."""
        return WheelInfo(summary, load=lambda: self._like(summary, file))

    def _held_lightly(self, facts: WheelFacts, summary: WheelSummary) -> WheelInfo:
        """``facts`` just read, as their ``summary`` with the full facts loaded from the cache on first
        use: a solve over every release reads a few hundred wheels before it analyses any, and holding
        all their symbol tables at once cost gigabytes. Kept in memory where the cache does not hold them."""
        if self.cache is None or self.cache.readonly or facts.partial:
            return WheelInfo.of(facts)
        # the entry holds these very facts, or (kept as it was) complete ones checked against the same sha256
        if self.cache.facts_verified(facts.sha256) is not facts.verified:
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
            got = self._read(file, lambda p: read(p) and (wanted is None or p in wanted), no_gpu_verdict)
            facts, learned = got.facts, got.url_entry
            # what was known is kept unless the server changed the file between the two reads
            if known is not None and known.directory_sha256 in (None, facts.directory_sha256):
                facts = known.merged(facts)
            return WheelInfo.of(facts)

        def keep(info: WheelInfo) -> None:
            full = info.full()
            if full is not None:
                self._keep(_Read(full, learned))

        return cache_first(lookup, through, keep, offline=self.offline, missing=lambda: self._missing(file))

    def variant_info(self, file: IndexFile) -> WheelInfo | None:
        """What is stored of ``file``, else its facts with only its smallest library read (and its
        dist-info and Python files), kept as partial facts: enough to tell a CUDA major the library's
        sonames name (:meth:`abiprobe.solve.collect.Collector.declared_variant`) for a few kB of a
        possibly huge wheel. A later read of the whole wheel replaces them. None (nothing more read than
        its zip directory) where that would not save much: no library, or one that is most of the wheel.
        Offline, only what is stored."""
        self._published_first(file)
        summary = self._stored_summary(file, partial=True)
        if summary is not None:
            return self._lazy(summary, file)
        if self.offline:
            return None
        with RemoteZip(self.http, file.url, file.sha256, file.size, self.cache) as remote:
            sizes = remote.compressed_sizes()
            binaries = sorted((n, name) for name, n in sizes.items() if looks_like_binary_member(name))
            if not binaries:
                return None
            smallest = installed_path(binaries[0][1])
            cost = sum(sizes[n] for n in select_members(list(sizes), lambda p: p == smallest))
            if 2 * cost > sum(sizes.values()):
                return None
            facts = remote.facts(file.filename, file.sha256, lambda p: p == smallest)
        self._keep(_Read(facts))
        return WheelInfo.of(facts)

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
            with RemoteZip(self.http, file.url, file.sha256, file.size, self.cache) as remote:
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
        return cache_first(lookup, through, keep, offline=self.offline, missing=lambda: missing).data


def no_gpu_verdict(path: str) -> bool:
    """Whether no GPU-code verdict looks at the runtime library installed at ``path``: only the units
    (libraries torch preloads) are judged for their GPU code, what they need by DT_NEEDED is not."""
    from abiprobe.analyze.loader import PRELOADED  # the loader's rules: not loaded with the index client

    return not PRELOADED.match(path)


# local wheels: always hashed, so their stored facts always answer; nothing to be offline about


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


def local_wheel_info(path: Path, cache: Cache | None = None) -> WheelInfo:
    """A local wheel's summary, its full facts loaded on first use (both from the cache when there, read
    from the file and stored when not; a stored entry gone or damaged behind its summary is read again)."""
    store = cache if cache is not None else Cache()
    digest = _local_digest(path)

    def current(facts: WheelFacts | None) -> WheelFacts | None:
        return None if facts is None else local_current(facts, path, store)

    def reread() -> WheelFacts:
        facts = _local_facts(path, digest)
        store.store_facts(facts)
        return facts

    def lookup() -> WheelInfo | None:
        summary = store.load_summary(digest)
        if summary is not None:
            return WheelInfo(summary, load=lambda: current(store.load_facts(digest)) or reread())
        hit = current(store.load_facts(digest))
        if hit is not None:
            store.store_summary(hit.summary())
        return WheelInfo.of(hit) if hit is not None else None

    def keep(info: WheelInfo) -> None:
        full = info.full()
        if full is not None:
            store.store_facts(full)

    return cache_first(
        lookup, lambda: WheelInfo.of(_local_facts(path, digest)), keep, offline=False, missing=lambda: ""
    )


def cached_wheel_facts(path: Path, cache: Cache | None = None) -> WheelFacts:
    """Facts of a local wheel, cache first (see :func:`local_wheel_info`)."""
    facts = local_wheel_info(path, cache).full()
    assert facts is not None  # read from the file when the cache has none
    return facts


def _local_facts(path: Path, digest: str) -> WheelFacts:
    from abiprobe.host.wheel import wheel_facts_from_path

    return wheel_facts_from_path(path, known_sha256=digest)
