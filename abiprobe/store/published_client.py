"""The client of published facts (``abiprobe.store.published``): before a listed wheel is read, the facts
the publisher read of that very sha256 are fetched, checked and kept in the cache.

Nothing is asked while the cache answers (a warm solve makes no request for the manifest). A fact file
is fetched only for the sha256 the user's own index lists, checked against the manifest's digest and
size, and decoded as a cache entry filed under that sha256 (it must describe exactly that wheel, and say
it was checked against it). Any trouble is one warning line, and the wheel is read as without.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from abiprobe import log
from abiprobe.errors import CacheError, FetchError
from abiprobe.net.http import Http, display_url
from abiprobe.store import entries
from abiprobe.store.cache import Cache
from abiprobe.store.primitives import is_sha256_hex, sha256_hex
from abiprobe.store.published import (
    MANIFEST_LIMIT,
    MANIFEST_NAME,
    Manifest,
    ManifestError,
    PublishedFile,
    _relative,
    published_setting,
)

if TYPE_CHECKING:
    from abiprobe.model.candidate import IndexFile


def _listed_sha256(file: IndexFile) -> str | None:
    """The sha256 the index lists ``file`` with, when it alone says which bytes the URL serves (a file
    listed again with other hashes is told apart by hashing it whole: nothing published answers for it)."""
    sha = file.sha256
    return sha if sha is not None and is_sha256_hex(sha) and not file.duplicate else None


_INSTEAD = {
    "facts": "reading the wheel itself",
    "summaries": "reading the wheel itself",
    "metadata": "reading the wheel itself",
    "analyses": "judging the set itself",
}


class PublishedFacts:
    """Published facts at ``location`` (a URL ending in ``/``), fetched through ``http`` into ``cache``."""

    def __init__(self, location: str, http: Http, cache: Cache) -> None:
        self.location, self.http, self.cache = location, http, cache
        self._guard = threading.Lock()
        self._manifest_lock = threading.Lock()
        self._manifest: Manifest | None = None
        self._manifest_tried = False
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._tried: set[tuple[str, str]] = set()

    def __repr__(self) -> str:
        return f"PublishedFacts({display_url(self.location)!r})"

    def manifest(self) -> Manifest | None:
        """The manifest, fetched on first use (once per run: a location that failed is not asked again)."""
        with self._manifest_lock:
            if not self._manifest_tried:
                self._manifest_tried = True
                self._manifest = self._fetch_manifest()
            return self._manifest

    def _fetch_manifest(self) -> Manifest | None:
        url = self.location + MANIFEST_NAME
        try:
            got = self.http.get(url, max_bytes=MANIFEST_LIMIT)
            if got.status != 200:
                raise ManifestError(f"HTTP {got.status}")
            from abiprobe.store.published import parse_manifest

            return parse_manifest(got.content)
        except (FetchError, ManifestError) as exc:
            reason = str(exc).removeprefix(display_url(url) + ": ")
            log.warn(f"published facts at {display_url(self.location)}: {reason}; every wheel is read itself")
            return None

    def _once(self, kind: str, sha256: str) -> threading.Lock | None:
        """The lock of one fetch, or None when it was tried already this run."""
        with self._guard:
            key = (kind, sha256)
            if key in self._tried:
                return None
            self._tried.add(key)
            return self._locks.setdefault(key, threading.Lock())

    def _bytes(self, kind: str, key: str, spec: PublishedFile, what: str) -> bytes | None:
        """The published file's bytes when they match the manifest; else None, said in one line."""
        url = self.location + _relative(kind, key)
        try:
            got = self.http.get(url, max_bytes=spec.size + 1)
        except FetchError as exc:
            problem = str(exc).removeprefix(display_url(url) + ": ")
        else:
            data = got.content
            if got.status != 200:
                problem = f"HTTP {got.status}"
            elif len(data) != spec.size or sha256_hex(data) != spec.sha256:
                problem = "does not match the manifest's digest"
            else:
                return data
        log.warn(f"published {kind} of {what}: {problem}; {_INSTEAD[kind]}")
        return None

    def fetch_facts(self, file: IndexFile) -> None:
        """Keep the published facts of the sha256 ``file`` is listed with, unless the cache holds
        complete facts checked against it (or the published ones are partial and it holds any)."""
        sha = _listed_sha256(file)
        if sha is None or self.cache.readonly:
            return
        header = entries.facts_header(entries.facts_path(self.cache.root, sha), sha)
        if header is not None and header.get("verified") is True and not header.get("partial"):
            return
        self._fetch_checked("facts", sha, file.filename, header is not None, entries.decode_facts,
                            lambda facts, data: self.cache.store_published_facts(facts, data))  # fmt: skip

    def fetch_summary(self, file: IndexFile) -> None:
        """Keep the published summary of the sha256 ``file`` is listed with (a few kB: what choosing
        candidates needs; the full facts are fetched when they are loaded), unless the cache holds a
        checked one (or the published one is partial and it holds any)."""
        sha = _listed_sha256(file)
        if sha is None or self.cache.readonly:
            return
        held = self.cache.load_summary(sha, allow_partial=True)
        if held is not None and held.verified and not held.partial:
            return
        self._fetch_checked("summaries", sha, file.filename, held is not None, entries.decode_summary,
                            lambda summary, _data: self.cache.store_summary(summary))  # fmt: skip

    def _fetch_checked(
        self,
        kind: Literal["facts", "summaries"],
        sha: str,
        filename: str,
        holds_any: bool,
        decode: Callable[[bytes, str], Any],
        store: Callable[[Any, bytes], None],
    ) -> None:
        """Fetch one published entry of ``kind`` once per run, check it against the manifest and against
        the wheel's sha256, and store it; anything wrong is one line and the wheel is read itself."""
        lock = self._once(kind, sha)
        if lock is None:
            return
        with lock:
            manifest = self.manifest()
            spec = getattr(manifest, kind).get(sha) if manifest is not None else None
            if spec is None or (spec.partial and holds_any):
                return
            data = self._bytes(kind, sha, spec, filename)
            if data is None:
                return
            try:
                entry = decode(data, sha)
            except CacheError as exc:
                log.warn(f"published {kind} of {filename}: {exc}; reading the wheel itself")
                return
            if not entry.verified:
                log.warn(f"published {kind} of {filename} were never checked against its sha256; "
                         "reading the wheel itself")  # fmt: skip
                return
            store(entry, data)

    def fetch_metadata(self, file: IndexFile) -> None:
        """Keep the published METADATA of the sha256 ``file`` is listed with, when the cache has none."""
        sha = _listed_sha256(file)
        if sha is None or self.cache.readonly:
            return
        if self.cache.load_metadata(sha) is not None:
            return
        lock = self._once("metadata", sha)
        if lock is None:
            return
        with lock:
            manifest = self.manifest()
            spec = manifest.metadata.get(sha) if manifest is not None else None
            data = self._bytes("metadata", sha, spec, file.filename) if spec is not None else None
            if data is None:
                return
            try:
                entry = entries.decode_metadata(data, sha)
            except CacheError as exc:
                log.warn(f"published metadata of {file.filename}: {exc}; reading the wheel itself")
                return
            if entry.key != sha or entry.directory_sha256 is not None:
                log.warn(f"published metadata of {file.filename} is not that of its sha256 read whole; "
                         "reading the wheel itself")  # fmt: skip
                return
            self.cache.store_metadata(sha, entry.data)

    def metadata_of(self, file: IndexFile) -> bytes | None:
        """METADATA of ``file`` from what is published of its listed sha256, where the cache holds none:
        None once the published file is kept (the cache answers), else the Requires-Dist of its published
        facts (all a solve reads of a METADATA), else None."""
        sha = _listed_sha256(file)
        if sha is None or self.cache.readonly or self.cache.load_metadata_entry(sha) is not None:
            return None
        self.fetch_metadata(file)
        if self.cache.load_metadata(sha) is not None:
            return None
        self.fetch_summary(file)
        summary = self.cache.load_summary(sha, allow_partial=True)
        if summary is None or not summary.verified:
            return None
        meta = summary.metadata
        lines = ["Metadata-Version: 2.1", f"Name: {meta.name}", f"Version: {meta.version}"]
        lines += [f"Requires-Python: {meta.requires_python}"] if meta.requires_python else []
        lines += [f"Requires-Dist: {r}" for r in meta.requires_dist]
        return ("\n".join(lines) + "\n").encode()

    def fetch_analysis(self, key: str) -> list[dict[str, Any]] | None:
        """The published verdicts stored under ``key`` (kept in the cache), or None."""
        if not is_sha256_hex(key) or self.cache.readonly:
            return None
        lock = self._once("analyses", key)
        if lock is None:
            return None
        with lock:
            manifest = self.manifest()
            spec = manifest.analyses.get(key) if manifest is not None else None
            data = self._bytes("analyses", key, spec, key[:16]) if spec is not None else None
            if data is None:
                return None
            try:
                verdicts = entries.decode_analysis(data, key)
            except CacheError as exc:
                log.warn(f"published analyses of {key[:16]}: {exc}; judging the set itself")
                return None
            self.cache.store_analysis(key, verdicts)
            return verdicts


def published_facts(
    http: Http, cache: Cache | None, *, disabled: bool, offline: bool
) -> PublishedFacts | None:
    """The configured published facts for a run (None: offline, turned off, or no location)."""
    if offline or cache is None or cache.readonly:
        return None
    setting = published_setting(disabled=disabled)
    return PublishedFacts(setting.location, http, cache) if setting.location is not None else None
