"""Pure zip structure parsing: end-of-central-directory (zip64 too) and central-directory entries."""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from abiprobe.errors import WheelFormatError

_EOCD = struct.Struct("<4sHHHHIIH")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_U16_MAX, _U32_MAX = 0xFFFF, 0xFFFFFFFF


@dataclass(frozen=True)
class ZipMember:
    """One central-directory entry; ``span_end`` is where the next member (or the directory) starts."""

    name: str
    method: int
    flags: int
    crc32: int
    compressed_size: int
    file_size: int
    header_offset: int
    span_end: int

    def local_header_skip(self, header: bytes) -> int:
        """Bytes of name and extra field after a 30-byte local header."""
        if len(header) != _LOCAL.size:
            raise WheelFormatError(f"{self.name}: truncated local header")
        sig, _ver, flags, _method, _t, _d, _crc, _cs, _us, name_len, extra_len = _LOCAL.unpack(header)
        if sig != b"PK\x03\x04":
            raise WheelFormatError(f"{self.name}: no local file header at offset {self.header_offset}")
        if flags & 0x1:
            raise WheelFormatError(f"{self.name}: encrypted zip members are not supported")
        return int(name_len) + int(extra_len)


@dataclass(frozen=True)
class CentralDirectory:
    members: tuple[ZipMember, ...]
    start: int
    size: int

    def by_name(self) -> dict[str, ZipMember]:
        return {m.name: m for m in self.members}


@dataclass(frozen=True)
class DirectoryLocation:
    """Where the central directory really starts, and how far recorded offsets are shifted."""

    start: int
    size: int
    entries: int
    shift: int


def locate_central_directory(
    tail: bytes, tail_start: int, total: int, fetch: Callable[[int, int], bytes]
) -> DirectoryLocation:
    """Find the EOCD in ``tail``, the file's bytes from ``tail_start``; ``fetch(a, b)`` reads [a, b)."""
    pos = tail.rfind(b"PK\x05\x06")
    while pos >= 0:
        if len(tail) - pos >= _EOCD.size:
            comment_len = struct.unpack_from("<H", tail, pos + 20)[0]
            if pos + _EOCD.size + comment_len == len(tail):
                break
        pos = tail.rfind(b"PK\x05\x06", 0, pos)
    if pos < 0:
        raise WheelFormatError("no end-of-central-directory record: not a zip file, or truncated")
    _sig, disk, cd_disk, _n_disk, entries, cd_size, cd_offset, _c = _EOCD.unpack_from(tail, pos)
    if disk != 0 or cd_disk != 0:
        raise WheelFormatError("multi-disk zip archives are not supported")
    eocd_abs = tail_start + pos
    record_abs = eocd_abs
    if _U16_MAX in (entries,) or _U32_MAX in (cd_size, cd_offset):
        if pos < _ZIP64_LOCATOR.size:
            raise WheelFormatError("zip64 end-of-central-directory locator missing")
        lsig, _d, z64_offset, _disks = _ZIP64_LOCATOR.unpack_from(tail, pos - _ZIP64_LOCATOR.size)
        if lsig != b"PK\x06\x07":
            raise WheelFormatError("zip64 end-of-central-directory locator missing")
        adjacent = pos - _ZIP64_LOCATOR.size - _ZIP64_EOCD.size
        if adjacent >= 0 and tail[adjacent : adjacent + 4] == b"PK\x06\x06":
            record_abs = tail_start + adjacent
            raw = tail[adjacent : adjacent + _ZIP64_EOCD.size]
        else:
            record_abs = z64_offset
            raw = fetch(record_abs, record_abs + _ZIP64_EOCD.size)
        if len(raw) != _ZIP64_EOCD.size or raw[:4] != b"PK\x06\x06":
            raise WheelFormatError("zip64 end-of-central-directory record missing")
        fields = _ZIP64_EOCD.unpack(raw)
        entries, cd_size, cd_offset = fields[7], fields[8], fields[9]
    start = record_abs - cd_size
    if start < 0 or record_abs > total:
        raise WheelFormatError("central directory lies outside the file")
    return DirectoryLocation(start=start, size=cd_size, entries=entries, shift=start - cd_offset)


def _zip64_extra(extra: bytes, usize: int, csize: int, offset: int) -> tuple[int, int, int]:
    """Replace 0xFFFFFFFF sizes/offset with values from the zip64 extra field (id 1)."""
    i = 0
    while i + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, i)
        body = extra[i + 4 : i + 4 + length]
        i += 4 + length
        if tag != 1:
            continue
        values = [struct.unpack_from("<Q", body, j)[0] for j in range(0, len(body) - 7, 8)]
        if usize == _U32_MAX and values:
            usize = values.pop(0)
        if csize == _U32_MAX and values:
            csize = values.pop(0)
        if offset == _U32_MAX and values:
            offset = values.pop(0)
    return usize, csize, offset


def parse_central_directory(data: bytes, location: DirectoryLocation) -> CentralDirectory:
    """Entries of a central directory held in ``data`` (exactly ``location.size`` bytes)."""
    if len(data) != location.size:
        raise WheelFormatError("central directory truncated")
    raw: list[tuple[str, int, int, int, int, int, int]] = []
    i = 0
    while i < len(data):
        if len(data) - i < _CENTRAL.size or data[i : i + 4] != b"PK\x01\x02":
            raise WheelFormatError(f"bad central directory entry at byte {i}")
        fields = _CENTRAL.unpack_from(data, i)
        flags, method, crc, csize, usize = fields[3], fields[4], fields[7], fields[8], fields[9]
        name_len, extra_len, comment_len, offset = fields[10], fields[11], fields[12], fields[16]
        end = i + _CENTRAL.size + name_len + extra_len + comment_len
        if end > len(data):
            raise WheelFormatError("central directory entry runs past its end")
        name_raw = data[i + _CENTRAL.size : i + _CENTRAL.size + name_len]
        extra = data[i + _CENTRAL.size + name_len : i + _CENTRAL.size + name_len + extra_len]
        usize, csize, offset = _zip64_extra(extra, usize, csize, offset)
        name = name_raw.decode("utf-8" if flags & 0x800 else "cp437", errors="replace")
        raw.append((name, method, flags, crc, csize, usize, offset + location.shift))
        i = end
    if location.entries not in (len(raw), _U16_MAX):
        raise WheelFormatError(f"central directory has {len(raw)} entries, the EOCD says {location.entries}")
    offsets = sorted({r[6] for r in raw} | {location.start})
    next_offset = {o: offsets[k + 1] for k, o in enumerate(offsets[:-1])}
    members = []
    for name, method, flags, crc, csize, usize, offset in raw:
        if offset < 0 or offset >= location.start:
            raise WheelFormatError(f"{name}: local header offset {offset} outside the file's data")
        members.append(ZipMember(name, method, flags, crc, csize, usize, offset, next_offset[offset]))
    return CentralDirectory(members=tuple(members), start=location.start, size=location.size)
