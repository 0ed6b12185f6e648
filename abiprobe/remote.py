"""Read a remote wheel's central directory and chosen members over HTTP ranges, without the rest.

One suffix-range request fetches the tail (EOCD, zip64 records, usually the whole central directory);
members are fetched in coalesced ranges and inflated incrementally into spooled temp files. A server
that ignores ranges gets one full, sha256-checked download, and the host is remembered for next time.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, BinaryIO

from abiprobe.errors import HashMismatchError, IndexError_, WheelFormatError
from abiprobe.http import Http, RetryableError, display_url, host_key
from abiprobe.zipdir import CentralDirectory, ZipMember, locate_central_directory, parse_central_directory

if TYPE_CHECKING:
    from abiprobe.cache import Cache
    from abiprobe.facts import WheelFacts
    from abiprobe.index.models import IndexFile

TAIL_SIZE = 64 * 1024
COALESCE_GAP = 64 * 1024
SPOOL_LIMIT = 16 << 20
NOTE_IGNORES_RANGES = "ignores-ranges"
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+)")
_IDENTITY = {"Accept-Encoding": "identity"}


class _ChunkReader:
    """Exact-length reads over an iterator of byte chunks; a short body is retryable."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buffer = b""

    def pieces(self, n: int) -> Iterator[bytes]:
        while n > 0:
            if not self._buffer:
                self._buffer = next(self._chunks, b"")
                if not self._buffer:
                    raise RetryableError("body ended early")
            piece, self._buffer = self._buffer[:n], self._buffer[n:]
            n -= len(piece)
            yield piece

    def read(self, n: int) -> bytes:
        return b"".join(self.pieces(n))

    def skip(self, n: int) -> None:
        for _ in self.pieces(n):
            pass


def _parse_content_range(value: str | None, url: str) -> tuple[int, int, int]:
    match = _CONTENT_RANGE.fullmatch((value or "").strip())
    if match is None:
        raise RetryableError(f"unusable Content-Range {value!r}")
    start, end, total = (int(g) for g in match.groups())
    if end < start or end >= total:
        raise RetryableError(f"inconsistent Content-Range {value!r}")
    return start, end, total


def _inflate(member: ZipMember, pieces: Iterable[bytes], out: IO[bytes]) -> None:
    """Decompress ``pieces`` of ``member`` into ``out`` and check its size and CRC32."""
    crc, produced = 0, 0

    def emit(data: bytes) -> None:
        nonlocal crc, produced
        if data:
            out.write(data)
            crc = zlib.crc32(data, crc)
            produced += len(data)

    try:
        if member.method == zipfile.ZIP_STORED:
            for piece in pieces:
                emit(piece)
        elif member.method == zipfile.ZIP_DEFLATED:
            inflater = zlib.decompressobj(-15)
            for piece in pieces:
                emit(inflater.decompress(piece, 1 << 20))
                while inflater.unconsumed_tail:
                    emit(inflater.decompress(inflater.unconsumed_tail, 1 << 20))
            emit(inflater.flush())
        else:
            raise WheelFormatError(f"{member.name}: unsupported zip compression method {member.method}")
    except zlib.error as exc:
        raise WheelFormatError(f"{member.name}: broken deflate stream ({exc})") from None
    if produced != member.file_size or crc != member.crc32:
        raise WheelFormatError(f"{member.name}: CRC32 or size does not match the central directory")


@dataclass(frozen=True)
class _Group:
    """Members fetched by one range request: [start, end) in file offsets."""

    start: int
    end: int
    members: tuple[ZipMember, ...]


def coalesce(members: Iterable[ZipMember], gap: int) -> list[_Group]:
    """Group members whose byte spans lie within ``gap`` bytes of each other."""
    groups: list[_Group] = []
    for m in sorted(members, key=lambda m: m.header_offset):
        if groups and m.header_offset - groups[-1].end <= gap:
            last = groups[-1]
            groups[-1] = _Group(last.start, max(last.end, m.span_end), (*last.members, m))
        else:
            groups.append(_Group(m.header_offset, m.span_end, (m,)))
    return groups


class RemoteZip:
    """A wheel on an HTTP server, read by range requests (or one full download when ranges fail)."""

    def __init__(
        self,
        http: Http,
        url: str,
        expected_sha256: str | None = None,
        size: int | None = None,
        cache: Cache | None = None,
        *,
        tail_size: int = TAIL_SIZE,
        coalesce_gap: int = COALESCE_GAP,
    ) -> None:
        self.http, self.url, self.cache = http, url, cache
        self.expected_sha256 = expected_sha256.lower() if expected_sha256 else None
        self.size = size
        self.tail_size, self.coalesce_gap = tail_size, coalesce_gap
        self.sha256: str | None = None  # known only after a full download
        self._directory: CentralDirectory | None = None
        self._local: zipfile.ZipFile | None = None
        self._local_file: IO[bytes] | None = None

    @property
    def _label(self) -> str:
        return display_url(self.url).rsplit("/", 1)[-1][:60]

    @property
    def mode(self) -> str:
        """``range`` or ``full`` once opened."""
        return "full" if self._local is not None else "range"

    def _host_ignores_ranges(self) -> bool:
        return self.cache is not None and bool(self.cache.host_note(host_key(self.url), NOTE_IGNORES_RANGES))

    def open(self) -> None:
        """Fetch the central directory (or the whole file where ranges are known not to work)."""
        if self._directory is not None or self._local is not None:
            return
        if self._host_ignores_ranges():
            self.open_full()
            return
        tail = self.http.with_retries(self.url, self._fetch_tail)
        if tail is None:
            if self.cache is not None:
                self.cache.set_host_note(host_key(self.url), NOTE_IGNORES_RANGES, True)
            return
        body, start = tail
        assert self.size is not None
        location = locate_central_directory(body, start, self.size, self._fetch_range)
        if location.start < start:
            body, start = self._fetch_range(location.start, start) + body, location.start
        offset = location.start - start
        self._directory = parse_central_directory(body[offset : offset + location.size], location)

    def open_full(self) -> None:
        """Download the whole file (hash-checked) instead of reading ranges."""
        if self._local is None:
            self.http.with_retries(self.url, lambda: self._download_full(None))

    def _fetch_tail(self) -> tuple[bytes, int] | None:
        """Suffix-range GET; a 200 answer is consumed as the full download (and returns None)."""
        headers = {"Range": f"bytes=-{self.tail_size}", **_IDENTITY}
        with self.http.stream(self.url, headers) as response:
            if response.status_code == 200:
                self._download_full(response)
                return None
            if response.status_code != 206:
                raise IndexError_(f"{display_url(self.url)}: HTTP {response.status_code}")
            start, end, total = _parse_content_range(response.headers.get("content-range"), self.url)
            self._check_total(total)
            if end != total - 1 or start != max(0, total - self.tail_size):
                raise RetryableError(f"Content-Range {start}-{end}/{total} is not the requested tail")
            body = _ChunkReader(self.http.iter_chunks(response)).read(end - start + 1)
            return body, start

    def _check_total(self, total: int) -> None:
        if self.size is None:
            self.size = total
        elif total != self.size:
            raise RetryableError(f"Content-Range says {total} bytes where {self.size} were expected")

    def _fetch_range(self, start: int, end: int) -> bytes:
        """Bytes [start, end) in one range request (retried)."""

        def once() -> bytes:
            with self._range(start, end) as reader:
                return reader.read(end - start)

        return self.http.with_retries(self.url, once)

    @contextmanager
    def _range(self, start: int, end: int) -> Iterator[_ChunkReader]:
        """A checked 206 response for bytes [start, end), as an exact-length reader."""
        headers = {"Range": f"bytes={start}-{end - 1}", **_IDENTITY}
        with self.http.stream(self.url, headers) as response:
            if response.status_code != 206:
                raise IndexError_(f"{display_url(self.url)}: HTTP {response.status_code} to a range request")
            got = _parse_content_range(response.headers.get("content-range"), self.url)
            self._check_total(got[2])
            if got[:2] != (start, end - 1):
                raise RetryableError(f"asked for bytes {start}-{end - 1}, got {got[0]}-{got[1]}")
            yield _ChunkReader(self.http.iter_chunks(response))

    def _download_full(self, response: object | None) -> None:
        """Stream the whole file to a temp file, check its sha256, and open it as a zip."""
        tmp = tempfile.TemporaryFile()  # noqa: SIM115 - kept open as the zip's backing file
        digest = hashlib.sha256()
        try:
            with self._full_body(response) as chunks, self.http.progress(self._label, self.size) as advance:
                for chunk in chunks:
                    tmp.write(chunk)
                    digest.update(chunk)
                    advance(len(chunk))
            self.sha256 = digest.hexdigest()
            if self.expected_sha256 is not None and self.sha256 != self.expected_sha256:
                raise HashMismatchError(
                    f"{display_url(self.url)}: sha256 {self.sha256} does not match the index's "
                    f"{self.expected_sha256}"
                )
            self.size = tmp.tell()
            tmp.seek(0)
            self._local = zipfile.ZipFile(tmp)
            self._local_file = tmp
        except zipfile.BadZipFile as exc:
            tmp.close()
            raise WheelFormatError(f"{display_url(self.url)}: not a valid zip file ({exc})") from None
        except BaseException:
            tmp.close()
            raise

    @contextmanager
    def _full_body(self, response: object | None) -> Iterator[Iterator[bytes]]:
        import httpx

        if isinstance(response, httpx.Response):
            yield self.http.iter_chunks(response)
            return
        with self.http.stream(self.url, _IDENTITY) as fresh:
            if fresh.status_code != 200:
                raise IndexError_(f"{display_url(self.url)}: HTTP {fresh.status_code}")
            yield self.http.iter_chunks(fresh)

    def names(self) -> list[str]:
        """Member names in central-directory order."""
        self.open()
        if self._local is not None:
            return self._local.namelist()
        assert self._directory is not None
        return [m.name for m in self._directory.members]

    def members(self) -> tuple[ZipMember, ...]:
        """The central directory's entries (range mode only; a full download has none to report)."""
        self.open()
        return self._directory.members if self._directory is not None else ()

    def read_members(self, names: Iterable[str]) -> dict[str, IO[bytes]]:
        """Fetch, inflate and CRC-check ``names``; each comes back as a seekable file at offset 0."""
        self.open()
        wanted = list(dict.fromkeys(names))
        if self._local is not None:
            return {n: self._read_local(n) for n in wanted}
        assert self._directory is not None
        by_name = self._directory.by_name()
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise WheelFormatError(f"{display_url(self.url)}: no member {missing[0]!r}")
        out: dict[str, IO[bytes]] = {}
        for group in coalesce((by_name[n] for n in wanted), self.coalesce_gap):
            out.update(self.http.with_retries(self.url, lambda g=group: self._read_group(g)))  # type: ignore[misc]
        return out

    def _read_group(self, group: _Group) -> dict[str, IO[bytes]]:
        results: dict[str, IO[bytes]] = {}
        try:
            with self._range(group.start, group.end) as reader:
                position = group.start
                for member in group.members:
                    reader.skip(member.header_offset - position)
                    skip = member.local_header_skip(reader.read(30))
                    reader.skip(skip)
                    data_start = member.header_offset + 30 + skip
                    if data_start + member.compressed_size > member.span_end:
                        raise WheelFormatError(f"{member.name}: local header overruns its span")
                    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_LIMIT)  # noqa: SIM115
                    results[member.name] = spool
                    with self.http.progress(
                        member.name.rsplit("/", 1)[-1], member.compressed_size
                    ) as advance:
                        _inflate(member, _counted(reader.pieces(member.compressed_size), advance), spool)
                    spool.seek(0)
                    position = data_start + member.compressed_size
        except BaseException:
            for spool in results.values():
                spool.close()
            raise
        return results

    def _read_local(self, name: str) -> IO[bytes]:
        assert self._local is not None
        spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_LIMIT)  # noqa: SIM115
        try:
            with self._local.open(name) as src:
                shutil.copyfileobj(src, spool, 1 << 20)
        except KeyError:
            spool.close()
            raise WheelFormatError(f"{display_url(self.url)}: no member {name!r}") from None
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            spool.close()
            raise WheelFormatError(f"{name}: broken zip member ({exc})") from None
        spool.seek(0)
        return spool

    def facts(
        self, filename: str, sha256: str | None = None, read: Callable[[str], bool] | None = None
    ) -> WheelFacts:
        """WheelFacts from the members ``abiprobe.wheel.select_members`` picks; nothing else is fetched.

        ``read`` (installed path -> bool) limits the binaries read; the rest are listed as unread."""
        from abiprobe.wheel import facts_from_members, select_members

        names = self.names()
        fetched = self.read_members(select_members(names, read))
        digest = sha256 or self.sha256 or self.expected_sha256 or ""
        try:
            return facts_from_members(filename, digest, self.size or 0, names, _opener(fetched), read)
        finally:
            for fh in fetched.values():
                fh.close()

    def close(self) -> None:
        if self._local is not None:
            self._local.close()
        if self._local_file is not None:
            self._local_file.close()

    def __enter__(self) -> RemoteZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _counted(pieces: Iterator[bytes], advance: Callable[[int], None]) -> Iterator[bytes]:
    for piece in pieces:
        advance(len(piece))
        yield piece


def _opener(fetched: Mapping[str, IO[bytes]]) -> Callable[[str], AbstractContextManager[BinaryIO]]:
    @contextmanager
    def open_member(name: str) -> Iterator[BinaryIO]:
        fh = fetched[name]
        fh.seek(0)
        yield fh  # type: ignore[misc]

    return open_member


def remote_wheel_facts(http: Http, file: IndexFile, cache: Cache | None = None) -> WheelFacts:
    """Facts of an index file: from the cache by sha256, else read remotely and stored.

    Without an index sha256 the whole file is downloaded so that the facts get a true key.
    """
    if cache is not None and file.sha256:
        hit = cache.load_facts(file.sha256)
        if hit is not None:
            return hit
    with RemoteZip(http, file.url, file.sha256, file.size, cache) as remote:
        if not file.sha256:
            remote.open_full()
        facts = remote.facts(file.filename)
    if cache is not None and facts.sha256:
        cache.store_facts(facts)
    return facts
