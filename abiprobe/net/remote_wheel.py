"""Read a remote wheel's central directory and chosen members over HTTP ranges, without the rest.

One suffix-range request fetches the tail (EOCD, zip64 records, usually the whole central directory);
members are fetched in coalesced ranges and inflated incrementally into spooled temp files. A server
that ignores ranges gets one full, sha256-checked download, and the host is remembered for next time.

Facts are stored under a sha256 only when it was verified: where the members to read are most of the
file (or the file is small) the whole file is streamed in one range, hashed as the members inflate.
Otherwise the facts are *unverified*: kept with the sha256 of the central directory they were read
through; when they may answer again is ``abiprobe.store.trust``'s rule.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Protocol

from abiprobe.binary.zipdir import (
    CentralDirectory,
    ZipMember,
    locate_central_directory,
    parse_central_directory,
)
from abiprobe.binary.zipguard import check_declared, check_produced, copy_member, open_zip
from abiprobe.errors import ElfFormatError, FetchError, HashMismatchError, WheelFormatError
from abiprobe.net.http import Http, RetryableError, display_url

if TYPE_CHECKING:
    from abiprobe.model.facts import ElfFacts, WheelFacts

TAIL_SIZE = 64 * 1024
COALESCE_GAP = 64 * 1024
SPOOL_LIMIT = 16 << 20
VERIFY_SHARE = 0.5  # members to read that make up this share of a file: the whole file is read, hashed
VERIFY_SMALL = 256 << 10  # a file this small is always read whole and hashed
NOTE_IGNORES_RANGES = "ignores-ranges"
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+)")
_IDENTITY = {"Accept-Encoding": "identity"}


class HostNotes(Protocol):
    """Where notes about a host are kept between runs (the store's cache keeps them): here, that the host
    ignores range requests."""

    def host_note(self, where: str, key: str) -> object | None: ...

    def set_host_note(self, where: str, key: str, value: object) -> None: ...


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


def _parse_content_range(value: str | None) -> tuple[int, int, int]:
    match = _CONTENT_RANGE.fullmatch((value or "").strip())
    if match is None:
        raise RetryableError(f"unusable Content-Range {value!r}")
    start, end, total = (int(g) for g in match.groups())
    if end < start or end >= total:
        raise RetryableError(f"inconsistent Content-Range {value!r}")
    return start, end, total


class _Stopped(Exception):  # control flow: the member needs no more bytes
    pass


def _inflate(
    member: ZipMember, pieces: Iterable[bytes], out: IO[bytes], stop: Callable[[int], bool] | None = None
) -> bool:
    """Decompress ``pieces`` of ``member`` into ``out`` and check its size and CRC32. ``stop`` (bytes
    inflated so far -> bool) may end it early: False is returned then, and nothing was checked."""
    crc, produced = 0, 0
    check_declared(member.name, member.file_size, member.compressed_size)

    def emit(data: bytes) -> None:
        nonlocal crc, produced
        if data:
            produced += len(data)
            check_produced(member.name, produced, member.file_size)
            out.write(data)
            crc = zlib.crc32(data, crc)
            if stop is not None and produced < member.file_size and stop(produced):
                raise _Stopped

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
    except _Stopped:
        return False
    if produced != member.file_size or crc != member.crc32:
        raise WheelFormatError(f"{member.name}: CRC32 or size does not match the central directory")
    return True


class _TablesReader:
    """Decides, as a member inflates, whether its loader tables have all been read (``read_elf_prefix``
    on the bytes so far, retried only once as many bytes as it last asked for are there)."""

    FIRST_TRY = 64 << 10

    def __init__(self, member: ZipMember, out: IO[bytes]) -> None:
        self.member, self.out = member, out
        self.next_try = self.FIRST_TRY
        self.facts: ElfFacts | None = None
        self.gave_up = False

    def __call__(self, produced: int) -> bool:
        if self.gave_up or produced < self.next_try:
            return False
        from abiprobe.binary.elf import read_elf_prefix

        position = self.out.tell()
        try:
            self.out.seek(0)
            if self.out.read(4) != b"\x7fELF":
                self.gave_up = True  # not an object (the whole member is read, and judged as usual)
                return False
            got = read_elf_prefix(self.out, self.member.file_size, self.member.name)  # type: ignore[arg-type]
        except (ElfFormatError, OSError):
            self.gave_up = True  # a reading of the whole member reports it
            return False
        finally:
            self.out.seek(position)
        if isinstance(got, int):
            self.next_try = max(got, produced + 1)
            return False
        self.facts = got
        return True


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
        cache: HostNotes | None = None,
        *,
        tail_size: int = TAIL_SIZE,
        coalesce_gap: int = COALESCE_GAP,
    ) -> None:
        self.http, self.url, self.cache = http, url, cache
        self.expected_sha256 = expected_sha256.lower() if expected_sha256 else None
        self.size = size
        self.tail_size, self.coalesce_gap = tail_size, coalesce_gap
        self.sha256: str | None = None  # known only once every byte was read and hashed
        self.directory_sha256: str | None = None  # sha256 of the central directory and end records
        self._directory: CentralDirectory | None = None
        self._local: zipfile.ZipFile | None = None
        self._local_file: IO[bytes] | None = None
        self.early: dict[str, ElfFacts] = {}  # members read only up to their loader tables, by name

    @property
    def _label(self) -> str:
        return display_url(self.url).rsplit("/", 1)[-1][:60]

    @property
    def mode(self) -> str:
        """``range`` or ``full`` once opened."""
        return "full" if self._local is not None else "range"

    def _host_ignores_ranges(self) -> bool:
        return self.cache is not None and bool(self.cache.host_note(self.url, NOTE_IGNORES_RANGES))

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
                self.cache.set_host_note(self.url, NOTE_IGNORES_RANGES, True)
            return
        body, start = tail
        assert self.size is not None
        location = locate_central_directory(body, start, self.size, self._fetch_range)
        if location.start < start:
            body, start = self._fetch_range(location.start, start) + body, location.start
        offset = location.start - start
        self._directory = parse_central_directory(body[offset : offset + location.size], location)
        self.directory_sha256 = hashlib.sha256(body[offset:]).hexdigest()

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
                raise FetchError(f"{display_url(self.url)}: HTTP {response.status_code}")
            start, end, total = _parse_content_range(response.headers.get("content-range"))
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
    def _range(self, start: int, end: int, digest: Any = None) -> Iterator[_ChunkReader]:
        """A checked 206 response for bytes [start, end), as an exact-length reader (every body byte fed
        to ``digest`` when given)."""
        headers = {"Range": f"bytes={start}-{end - 1}", **_IDENTITY}
        with self.http.stream(self.url, headers) as response:
            if response.status_code != 206:
                raise FetchError(f"{display_url(self.url)}: HTTP {response.status_code} to a range request")
            got = _parse_content_range(response.headers.get("content-range"))
            self._check_total(got[2])
            if got[:2] != (start, end - 1):
                raise RetryableError(f"asked for bytes {start}-{end - 1}, got {got[0]}-{got[1]}")
            chunks = self.http.iter_chunks(response)
            yield _ChunkReader(chunks if digest is None else _hashed(chunks, digest))

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
            self._check_sha256(digest.hexdigest())
            self.size = tmp.tell()
            tmp.seek(0)
            self._local = open_zip(tmp, display_url(self.url))
            self._local_file = tmp
        except BaseException:
            tmp.close()
            raise

    def _check_sha256(self, actual: str) -> None:
        """Record the sha256 of every byte read; one that is not the index's is never trusted."""
        if self.expected_sha256 is not None and actual != self.expected_sha256:
            raise HashMismatchError(
                f"{display_url(self.url)}: sha256 {actual} does not match the index's {self.expected_sha256}"
            )
        self.sha256 = actual

    @contextmanager
    def _full_body(self, response: object | None) -> Iterator[Iterator[bytes]]:
        import httpx

        if isinstance(response, httpx.Response):
            yield self.http.iter_chunks(response)
            return
        with self.http.stream(self.url, _IDENTITY) as fresh:
            if fresh.status_code != 200:
                raise FetchError(f"{display_url(self.url)}: HTTP {fresh.status_code}")
            yield self.http.iter_chunks(fresh)

    def names(self) -> list[str]:
        """Member names in central-directory order."""
        self.open()
        if self._local is not None:
            return self._local.namelist()
        assert self._directory is not None
        return [m.name for m in self._directory.members]

    def compressed_sizes(self) -> dict[str, int]:
        """Each member's compressed size, as the zip directory gives it."""
        self.open()
        if self._local is not None:
            return {i.filename: i.compress_size for i in self._local.infolist()}
        assert self._directory is not None
        return {m.name: m.compressed_size for m in self._directory.members}

    def members(self) -> tuple[ZipMember, ...]:
        """The central directory's entries (range mode only; a full download has none to report)."""
        self.open()
        return self._directory.members if self._directory is not None else ()

    def should_verify(self, names: Iterable[str]) -> bool:
        """Whether reading ``names`` should read (and hash) the whole file: the run checks every wheel
        (``Http.verify_wheels``), it is small, the members are most of it, or the index gave no sha256 to
        key the facts by."""
        self.open()
        if self._local is not None or self._directory is None:
            return False
        by_name = self._directory.by_name()
        share = sum(by_name[n].span_end - by_name[n].header_offset for n in set(names) if n in by_name)
        size = self.size or 0
        return (
            self.http.verify_wheels
            or self.expected_sha256 is None
            or size <= VERIFY_SMALL
            or share >= VERIFY_SHARE * size
        )

    def read_members(
        self, names: Iterable[str], *, verify: bool = False, tables_only: Callable[[str], bool] | None = None
    ) -> dict[str, IO[bytes]]:
        """Fetch, inflate and CRC-check ``names``; each comes back as a seekable file at offset 0.

        ``verify`` streams the whole file in one range instead, hashed (``sha256``) as the members pass.
        ``tables_only`` (installed path -> bool; ignored with ``verify``) stops inflating an accepted ELF
        member once its loader tables are read: it comes back in ``early`` as facts (``gpu_unread``)."""
        self.open()
        wanted = list(dict.fromkeys(names))
        if self._local is not None:
            return {n: self._read_local(n) for n in wanted}
        assert self._directory is not None
        by_name = self._directory.by_name()
        missing = [n for n in wanted if n not in by_name]
        if missing:
            raise WheelFormatError(f"{display_url(self.url)}: no member {missing[0]!r}")
        if verify:
            assert self.size is not None
            members = tuple(sorted((by_name[n] for n in wanted), key=lambda m: m.header_offset))
            whole = _Group(0, self.size, members)
            return self.http.with_retries(self.url, lambda: self._read_group(whole, verify=True))
        out: dict[str, IO[bytes]] = {}
        for group in coalesce((by_name[n] for n in wanted), self.coalesce_gap):
            read = partial(self._read_group, group, tables_only=tables_only)
            out.update(self.http.with_retries(self.url, read))
        return out

    def _read_group(
        self, group: _Group, *, verify: bool = False, tables_only: Callable[[str], bool] | None = None
    ) -> dict[str, IO[bytes]]:
        """The group's members, in one range request. A member whose installed path ``tables_only``
        accepts is inflated no further once its loader tables have all been read: its facts go to
        ``early`` (no file comes back for it), and the members after it are asked for anew."""
        from abiprobe.binary.wheel_members import installed_path

        results: dict[str, IO[bytes]] = {}
        digest = hashlib.sha256() if verify else None
        pending = list(group.members)
        start = group.start  # the first request covers the group (the whole file when verifying)
        try:
            while pending:
                with self._range(start, group.end, digest) as reader:
                    position = start
                    while pending:
                        member = pending.pop(0)
                        reader.skip(member.header_offset - position)
                        skip = member.local_header_skip(reader.read(30))
                        reader.skip(skip)
                        data_start = member.header_offset + 30 + skip
                        if data_start + member.compressed_size > member.span_end:
                            raise WheelFormatError(f"{member.name}: local header overruns its span")
                        spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_LIMIT)  # noqa: SIM115
                        results[member.name] = spool
                        early = (
                            tables_only is not None
                            and digest is None
                            and tables_only(installed_path(member.name))
                        )
                        tables = _TablesReader(member, spool) if early else None
                        with self.http.progress(
                            member.name.rsplit("/", 1)[-1], member.compressed_size
                        ) as advance:
                            pieces = _counted(reader.pieces(member.compressed_size), advance)
                            whole = _inflate(member, pieces, spool, tables)
                        if not whole:  # the rest of this member (and of this response) is not needed
                            assert tables is not None and tables.facts is not None
                            self.early[member.name] = tables.facts
                            results.pop(member.name).close()
                            if pending:
                                start = pending[0].header_offset
                            break
                        spool.seek(0)
                        position = data_start + member.compressed_size
                    else:
                        if digest is not None:
                            reader.skip(group.end - position)
                            self._check_sha256(digest.hexdigest())
        except BaseException:
            for spool in results.values():
                spool.close()
            raise
        return results

    def _read_local(self, name: str) -> IO[bytes]:
        assert self._local is not None
        spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_LIMIT)  # noqa: SIM115
        try:
            copy_member(self._local, name, spool)
        except KeyError:
            spool.close()
            raise WheelFormatError(f"{display_url(self.url)}: no member {name!r}") from None
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        return spool

    def facts(
        self,
        filename: str,
        sha256: str | None = None,
        read: Callable[[str], bool] | None = None,
        *,
        tables_only: Callable[[str], bool] | None = None,
        unread_sources: frozenset[str],
    ) -> WheelFacts:
        """WheelFacts from the members ``abiprobe.binary.wheel.select_members`` picks; nothing else fetched
        (``unread_sources``: the packages whose Python sources are not read, ``Stack.unread_sources()``).

        ``read`` (installed path -> bool) limits the binaries read; the rest are listed as unread.
        ``tables_only`` (installed path -> bool): where the file is not read whole to be verified anyway,
        each accepted ELF member is inflated only up to the end of its loader tables and its dynamic
        section, and its GPU code is left unread (``ElfFacts.gpu_unread``): for libraries no GPU-code
        verdict looks at."""
        from abiprobe.binary.wheel import facts_from_members, select_members
        from abiprobe.binary.wheel_members import installed_path

        names = self.names()
        selected = select_members(names, read, unread_sources=unread_sources)
        # a member read only up to its loader tables costs a fraction of its size: not counted as read
        # whole, or a wheel of one big library would always be hashed whole for its sonames
        costly = [n for n in selected if tables_only is None or not tables_only(installed_path(n))]
        verify = self.should_verify(costly)
        self.early.clear()
        fetched = self.read_members(selected, verify=verify, tables_only=None if verify else tables_only)
        digest = self.sha256 or sha256 or self.expected_sha256 or ""
        try:
            return facts_from_members(
                filename,
                digest,
                self.size or 0,
                names,
                _opener(fetched),
                read,
                verified=self.sha256 is not None,
                directory_sha256=None if self.sha256 is not None else self.directory_sha256,
                prepared=self.early,
                unread_sources=unread_sources,
            )
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


def _hashed(chunks: Iterator[bytes], digest: Any) -> Iterator[bytes]:
    for chunk in chunks:
        digest.update(chunk)
        yield chunk
