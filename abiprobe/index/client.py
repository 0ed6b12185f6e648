"""Simple-API client: project pages revalidated through the cache, PEP 658 metadata, several indexes."""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion

from abiprobe.binary.zipguard import SMALL_MEMBER_LIMIT
from abiprobe.errors import FetchError, HashMismatchError
from abiprobe.index.config import IndexSource, Strategy
from abiprobe.index.multi import (
    FetchStatus,
    PageFetch,
    ProjectListing,
    combine,
    first_index_admits,
    has_project,
    sources_for,
)
from abiprobe.index.pep691 import ACCEPT, is_json_content_type, parse_json_page
from abiprobe.model.candidate import NOT_CACHED, IndexFile, ProjectPage
from abiprobe.net.http import Http, display_url
from abiprobe.store.cache import Cache, CachedPage, is_stale
from abiprobe.store.entries import PageRecord
from abiprobe.store.reads import cache_first

DEFAULT_STALE_AFTER = 24 * 3600.0


def project_url(source: IndexSource, project: str) -> str:
    """``<index>/<normalized-name>/`` for a simple index; the page itself for find-links."""
    if source.kind == "find-links":
        return source.url
    return f"{source.url.rstrip('/')}/{canonicalize_name(project)}/"


def parse_page(
    body: bytes, content_type: str | None, page_url: str, index_url: str, project: str | None
) -> ProjectPage:
    """JSON or HTML by content type; never sees credentials (``page_url`` is a display URL)."""
    if is_json_content_type(content_type):
        return parse_json_page(body, page_url, index_url=index_url, project=project)
    from abiprobe.index.pep503 import parse_html_page  # html.parser, for the indexes that serve HTML

    return parse_html_page(body, page_url, index_url=index_url, project=project)


def _unasked_404(fetched_at: float) -> str:
    """What an offline run says of a stored "not listed here" it cannot ask about again."""
    from abiprobe.report.matrix_json import age_text

    return f"HTTP 404 when asked {age_text(time.time() - fetched_at)} ago, not asked again (offline)"


class IndexClient:
    """Reads project pages from ordered indexes; ``offline`` answers from the cache only."""

    def __init__(
        self,
        index_urls: Sequence[str | IndexSource],
        cache: Cache | None,
        http: Http,
        offline: bool = False,
        *,
        strategy: Strategy = "first-index",
        pins: Mapping[str, str] | None = None,
        stale_after: float = DEFAULT_STALE_AFTER,
        fresh_for: float = 0.0,
        refresh: bool = False,
    ) -> None:
        self.sources = tuple(s if isinstance(s, IndexSource) else IndexSource(url=s) for s in index_urls)
        self.cache, self.http, self.offline = cache, http, offline
        self.strategy = strategy
        self.pins = {str(canonicalize_name(k)): v for k, v in (pins or {}).items()}
        self.stale_after = stale_after
        self.fresh_for = fresh_for  # a cached page younger than this is used without asking the index
        # ``refresh``: a page fetched before this client was made is asked for afresh, without validators
        self.refresh = refresh
        self._not_before = time.time() if refresh else None
        self._answered: dict[tuple[str, str], PageFetch] = {}  # by revalidate(), for this client's life
        # pages revalidate() asked for that have not been waited for yet (see settle())
        self._pending: dict[tuple[str, str], Future[PageFetch | None]] = {}
        # pages this run found as they were stored (a 304, or the very body again): read from the cache
        self._unchanged: set[str] = set()
        self._started = time.time()  # a page stored before this, reused unasked, is as it was stored
        # each file a page read this run listed: listed as the stored page listed it (URL and sha256)?
        self._as_before: dict[tuple[str, str], bool] = {}
        self._records: dict[str, PageRecord | None] = {}  # page records read, by URL
        self.listed: set[str] = set()  # every project list_project was asked for

    def without(self, labels: Iterable[str]) -> IndexClient:
        """This client without the indexes labelled ``labels``, sharing what it listed and revalidated."""
        dead = set(labels)
        other = IndexClient(
            [s for s in self.sources if s.label not in dead],
            self.cache,
            self.http,
            self.offline,
            strategy=self.strategy,
            pins=self.pins,
            stale_after=self.stale_after,
            fresh_for=self.fresh_for,
        )
        other.refresh, other._not_before = self.refresh, self._not_before
        other._answered, other.listed, other._pending = self._answered, self.listed, self._pending
        other._unchanged, other._started, other._as_before = self._unchanged, self._started, self._as_before
        other._records = self._records
        return other

    def revalidate(self, projects: Iterable[str], *, wait: bool = True) -> int:
        """Ask every index at once about the stored pages of ``projects`` that are older than the
        freshness window (conditionally, with their validators), in the order listings would read
        them: under ``first-index`` an index after one whose stored page lists the project is not asked
        unless it is of the same pool (``first_index_admits``).
        A later listing uses these answers instead of asking again; a page found unchanged is parsed
        only when a listing needs it. A page not stored is left to its listing, and the stored pages of
        later indexes are asked about all the same (an index that was down stores none). Returns how
        many pages were asked for.

        Without ``wait`` it returns once they are asked: a listing waits for its own page's answer, and
        whatever depends on how the pages compare with the stored ones (``listing_as_before``,
        ``page_identity``) waits for all of them (``settle``)."""
        if self.offline or self.cache is None:
            return 0
        todo: list[tuple[IndexSource, str]] = []
        for project in dict.fromkeys(str(canonicalize_name(p)) for p in projects):
            found_in: str | None = None  # first-index: the pool of the first stored page listing it
            for source in sources_for(project, self.sources, self.pins):
                if self.strategy == "first-index" and not first_index_admits(found_in, source.pool):
                    continue
                record = self._record(project_url(source, project))
                if record is None:  # never stored (an index that was down): its listing asks it again;
                    continue  # the stored pages after it were read by an earlier run, so are asked now
                if not self._reusable(record):
                    todo.append((source, project))
                if not record.missing and found_in is None:
                    found_in = source.pool
        if not todo:
            return 0
        # as many at once as the client keeps connections: a warm solve waits about one round trip
        pool = ThreadPoolExecutor(max(1, min(len(todo), 2 * self.http.max_workers)))
        for source, project in todo:
            self._pending[(source.url, project)] = pool.submit(
                self._fetch_page, source, project, parse_unchanged=False
            )
        pool.shutdown(wait=False)  # its threads end with the last page
        if wait:
            self.settle()
        return len(todo)

    def settle(self) -> None:
        """Wait for every page ``revalidate`` asked for; their answers are kept for the listings."""
        for key in list(self._pending):
            self._await(key)

    def _await(self, key: tuple[str, str]) -> None:
        pending = self._pending.get(key)
        if pending is None:
            return
        fetch = pending.result()  # several threads may wait on one page: each keeps the same answer
        if fetch is not None:
            self._answered[key] = fetch
        self._pending.pop(key, None)

    def fetch_page(self, source: IndexSource, project: str) -> PageFetch:
        """One index's page for ``project``; failures are reported in the result, not raised."""
        key = (source.url, str(canonicalize_name(project)))
        self._await(key)
        known = self._answered.get(key)
        if known is not None:
            return known
        fetch = self._fetch_page(source, project)
        assert fetch is not None
        return fetch

    def _fetch_page(
        self, source: IndexSource, project: str, *, parse_unchanged: bool = True
    ) -> PageFetch | None:
        """One page, asked for unless stored and fresh. Each file listed is noted (``_note``)
        as listed the way the stored page listed it, or not; ``parse_unchanged`` False returns None for
        a page found unchanged (it is read from the cache when a listing needs it)."""
        url = project_url(source, project)
        shown = display_url(url)
        index_url = display_url(source.url)
        name = None if source.kind == "find-links" else project

        def from_cache(page: CachedPage, error: str | None) -> PageFetch:
            stale = is_stale(page, self.stale_after)
            if page.missing:  # the index said it does not list the project
                if error is not None:
                    return PageFetch(source, shown, "failed", error=error, from_cache=True, stale=stale)
                if self.offline:  # a negative answer reused unasked: said, with its age, and not whole
                    return PageFetch(source, shown, "failed", None, _unasked_404(page.fetched_at), True,
                                     False, stale, page.fetched_at)  # fmt: skip
                gone = "HTTP 404 (stored)"
                return PageFetch(source, shown, "not-found", None, gone, True, False, stale, page.fetched_at)
            parsed = parse_page(page.body, page.content_type, shown, index_url, name)
            if error is None and not self.offline:  # reused unasked: as stored before this run, or not
                before = url in self._unchanged or (page.fetched_at < self._started and not self.refresh)
                self._note(parsed.files, before)
            status: FetchStatus = "ok" if error is None else "failed"
            revalidated = url in self._unchanged
            return PageFetch(source, shown, status, parsed, error, True, revalidated, stale, page.fetched_at)

        if self.offline:
            cached = self.cache.load_page(url) if self.cache is not None else None
            if cached is None:
                return PageFetch(source, shown, "failed", error=NOT_CACHED)
            return from_cache(cached, None)
        # what is decided from the stored page's record alone; its body is read where it is used
        record = self._record(url)
        # a page that parsed with problems is asked for whole again: a 304 would keep its body and type
        usable = record is not None and self._trusted(record.problems, record.fetched_at)
        # a listing parses the stored body whatever the answer; a revalidation needs it only if it changed
        reuse = record is not None and (self._reusable(record) or (usable and url in self._unchanged))
        cached = self._stored_page(url) if usable and (reuse or parse_unchanged) else None
        if reuse and cached is not None:
            return from_cache(cached, None)
        if (reuse or parse_unchanged) and cached is None:
            usable = False  # the entry went between its record and its body: asked for whole
        headers = {"Accept": ACCEPT}
        if usable and record is not None and record.etag:
            headers["If-None-Match"] = record.etag
        if usable and record is not None and record.last_modified:
            headers["If-Modified-Since"] = record.last_modified
        try:
            response = self.http.get(url, headers)
        except FetchError as exc:
            reason = str(exc).removeprefix(f"{shown}: ")
            cached = cached or (self._stored_page(url) if record is not None else None)
            if cached is not None:
                return from_cache(cached, reason)
            return PageFetch(source, shown, "failed", error=reason)
        now = time.time()
        same_body = (
            response.status == 200
            and record is not None
            and self.cache is not None
            and response.headers.get("content-type", "") == record.content_type
            and self.cache.holds_body(record, response.content)
        )
        if usable and record is not None and not record.missing and (response.status == 304 or same_body):
            if self.cache is not None:  # unchanged: only the time it was last confirmed moves
                self.cache.touch_page(url, now, body_sha256=record.body_sha256)
                self._forget(url)
            self._unchanged.add(url)
            if not parse_unchanged or cached is None:
                return None
            page = parse_page(cached.body, cached.content_type, shown, index_url, name)
            self._note(page.files, True)
            return PageFetch(source, shown, "ok", page, from_cache=True, revalidated=True, fetched_at=now)
        if response.status == 304 and record is not None and usable:  # still not listed there
            if self.cache is not None:
                self.cache.touch_page(url, now, body_sha256=record.body_sha256)
                self._forget(url)
            return PageFetch(source, shown, "not-found", error="HTTP 404 (unchanged)", from_cache=True)
        if response.status in (404, 410):
            if self.cache is not None:  # remembered like a page, so a fresh "not here" is not asked again
                self.cache.store_page(
                    CachedPage(shown, b"", "", response.headers.get("etag"),
                               response.headers.get("last-modified"), now, missing=True)
                )  # fmt: skip
                self._forget(url)
            return PageFetch(source, shown, "not-found", error=f"HTTP {response.status}")
        if response.status != 200:
            return PageFetch(source, shown, "failed", error=f"HTTP {response.status}")
        content_type = response.headers.get("content-type", "")
        try:
            page = parse_page(response.content, content_type, display_url(response.url), index_url, name)
        except FetchError as exc:
            return PageFetch(source, shown, "failed", error=str(exc))
        before = (cached or self._stored_page(url)) if usable else None
        self._note_changed(page, before, shown, index_url, name)
        if self.cache is not None:
            self.cache.store_page(
                CachedPage(
                    url=shown,
                    body=response.content,
                    content_type=content_type,
                    etag=response.headers.get("etag"),
                    last_modified=response.headers.get("last-modified"),
                    fetched_at=now,
                    problems=bool(page.problems),
                )
            )
            self._forget(url)
        return PageFetch(source, shown, "ok", page, fetched_at=now)

    def _stored_page(self, url: str) -> CachedPage | None:
        return self.cache.load_page(url) if self.cache is not None else None

    def _record(self, url: str) -> PageRecord | None:
        """The stored record of the page at ``url`` (read once per run: this client's own writes drop it)."""
        if self.cache is None:
            return None
        if url not in self._records:
            self._records[url] = self.cache.page_record(url)
        return self._records[url]

    def _forget(self, url: str) -> None:
        self._records.pop(url, None)

    def _note(self, files: Iterable[IndexFile], as_before: bool) -> None:
        """Record whether a page read this run lists each of ``files`` as the page stored before the run
        did (the first answer for a file stands)."""
        for f in files:
            if f.sha256:
                self._as_before.setdefault((display_url(f.url), f.sha256), as_before)

    def listed_as_before(self, file: IndexFile) -> bool:
        """Whether the index lists ``file`` (a wheel: same URL, same sha256) as it did before this run
        (``listing_as_before`` is True)."""
        return self.listing_as_before(file) is True

    def listing_as_before(self, file: IndexFile, *, unlisted: bool = False) -> bool | None:
        """Whether the index lists ``file`` as it did before this run: as a page read this run listed it,
        else (a file a stored result names, its page not read) whether every stored page of its project
        that a listing would read is one this run found unchanged or reuses unasked from before the run.
        A page read this run that does not list the file answers ``unlisted``; a page not stored (asked
        for when a listing needs it) leaves it open: None."""
        if not file.sha256:
            return False  # listed without a sha256: no listing says which bytes it names
        self.settle()
        noted = self._as_before.get((display_url(file.url), file.sha256))
        if noted is not None:
            return noted
        try:
            project = str(parse_wheel_filename(file.filename)[0])
        except (InvalidWheelFilename, InvalidVersion):
            return False
        found_in: str | None = None
        for source in sources_for(project, self.sources, self.pins):
            if self.strategy == "first-index" and not first_index_admits(found_in, source.pool):
                continue
            url = project_url(source, project)
            answered = self._answered.get((source.url, project))
            if answered is not None and answered.page is not None:
                return unlisted
            record = self._record(url)
            if record is None:
                return None
            if record.missing and record.fetched_at >= self._started:
                continue  # asked by this run: still not listed there
            reused = not self.refresh and record.fetched_at < self._started and self._reusable(record)
            if url not in self._unchanged and not reused:
                return False
            if not record.missing and found_in is None:
                found_in = source.pool
        return True

    def _note_changed(
        self, page: ProjectPage, before: CachedPage | None, shown: str, index_url: str, name: str | None
    ) -> None:
        """A page with a new body: a file is listed as before only where the stored page (usable, so
        not under ``refresh``) listed the very URL with the very sha256."""
        old: set[tuple[str, str | None]] = set()
        if before is not None and not before.missing:
            with contextlib.suppress(FetchError):
                parsed = parse_page(before.body, before.content_type, shown, index_url, name)
                old = {(f.url, f.sha256) for f in parsed.files}
        self._note([f for f in page.files if (f.url, f.sha256) in old], True)
        self._note([f for f in page.files if (f.url, f.sha256) not in old], False)

    def _trusted(self, problems: bool, fetched_at: float) -> bool:
        """Whether a stored page may be revalidated or reused: it parsed cleanly, and (under
        ``refresh``) was fetched by this very run."""
        return not problems and (self._not_before is None or fetched_at >= self._not_before)

    def _reusable(self, record: PageRecord) -> bool:
        """Whether a stored page may be reused without asking: a sound page inside the freshness window.
        A stored "not listed here" is only once this run asked (one 404 from a CDN would otherwise hide
        a project for the whole window), and a page that parsed with problems never is."""
        return (
            (not record.missing or record.fetched_at >= self._started)
            and self._trusted(record.problems, record.fetched_at)
            and self._fresh(record.fetched_at)
        )

    def _fresh(self, fetched_at: float) -> bool:
        return time.time() - fetched_at < self.fresh_for or self._not_before is not None

    def list_project(self, project: str, *, strategy: Strategy | None = None) -> ProjectListing:
        """Candidates of ``project`` across the configured indexes under the strategy and pins."""
        chosen = strategy or self.strategy
        self.listed.add(str(canonicalize_name(project)))
        sources = sources_for(project, self.sources, self.pins)
        if chosen == "best-match":
            fetches = self.http.map(lambda s: self.fetch_page(s, project), sources)
        else:
            fetches = []
            found_in: str | None = None  # the pool of the first index that has the project
            for source in sources:
                if not first_index_admits(found_in, source.pool):
                    continue  # first-index: later indexes are asked only within that index's pool
                fetches.append(self.fetch_page(source, project))
                if found_in is None and has_project(fetches[-1], project):
                    found_in = source.pool
        return combine(project, chosen, fetches)

    def page_identity(self, project: str) -> tuple[str, ...] | None:
        """What the cache holds for ``project``'s pages (their bodies' sha256s), when this client would
        answer from those very pages without asking (offline, or fresh); None when it would ask.

        A page that is not there contributes nothing to a listing, so it adds nothing here either: an
        offline run (no page of a dead index) and an online one (the dead index skipped) agree."""
        if self.cache is None:
            return None
        self.settle()
        out = []
        for source in sources_for(project, self.sources, self.pins):
            record = self._record(project_url(source, project))
            if record is None and self.offline:
                continue
            if record is None:
                return None
            if not self.offline and not self._reusable(record):
                return None
            if not record.missing:
                out.append(record.body_sha256)
        return tuple(out)

    def fetch_metadata(self, file: IndexFile) -> bytes:
        """The wheel's PEP 658 core metadata, hash-checked, cached under the wheel's sha256 (the cache-first
        read of ``abiprobe.store.reads``)."""
        key, cache = file.sha256 or file.metadata_url, self.cache
        return cache_first(
            lambda: cache.load_metadata(key) if cache is not None else None,
            lambda: self._download_metadata(file),
            lambda data: cache.store_metadata(key, data) if cache is not None else None,
            offline=self.offline,
            missing=lambda: f"{display_url(file.metadata_url)}: not in the cache (offline)",
        )

    def _download_metadata(self, file: IndexFile) -> bytes:
        shown = display_url(file.metadata_url)
        if not file.has_metadata:
            raise FetchError(f"{file.filename}: the index offers no PEP 658 metadata file")
        response = self.http.get(file.metadata_url, max_bytes=SMALL_MEMBER_LIMIT)
        if response.status != 200:
            raise FetchError(f"{shown}: HTTP {response.status}")
        expected = file.metadata_hashes.get("sha256")
        if expected is not None:
            actual = hashlib.sha256(response.content).hexdigest()
            if actual != expected:
                raise HashMismatchError(f"{shown}: sha256 {actual} does not match the index's {expected}")
        return response.content
