"""Fatbin containers: walk the headers of concatenated containers and list their entries.

Only headers are read, never payloads, so a multi-gigabyte ``.nv_fatbin`` costs one small read per entry.
The walkers take a :data:`abiprobe.binary.bounded.Reader` (a window of a ByteSource), so the same code
serves bytes and seekable streams; they check every offset against the container before reading it.
Layouts and flag bits: the CUDA binaries reference, checked against nvcc 13.0 builds.
"""

from __future__ import annotations

import struct
from typing import Final

from abiprobe.binary.bounded import ByteSource, Reader
from abiprobe.errors import FatbinFormatError
from abiprobe.model.facts import GpuCode, GpuCodeKind, GpuVariant

FATBIN_MAGIC: Final = 0xBA55ED50
FATBIN_MAGIC_BYTES: Final = struct.pack("<I", FATBIN_MAGIC)
CONTAINER_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries
ENTRY_HEADER = struct.Struct("<HHIQIIHHIIIQQQ")  # first 0x40 bytes of an entry header
CONTAINER_VERSION: Final = 1
ENTRY_HEADER_VERSION: Final = 0x0101
MAX_ENTRY_HEADER: Final = 0x1000

KIND_PTX: Final = 1
KIND_ELF: Final = 2
KIND_LTOIR: Final = 8
_KINDS: Final[dict[int, GpuCodeKind]] = {KIND_PTX: "ptx", KIND_ELF: "sass", KIND_LTOIR: "ltoir"}

FLAG_LZ4: Final = 0x2000
FLAG_ZSTD: Final = 0x8000
FLAG_ARCH_SPECIFIC: Final = 0x100000  # sm_XXa / compute_XXa
FLAG_FAMILY: Final = 0x200000  # sm_XXf / compute_XXf

_ZERO_CHUNK: Final = 1 << 16
_SCAN_CHUNK: Final = 1 << 20


def _entry(header: bytes, at: int, container: str, strict_kinds: bool) -> GpuCode | None:
    """One entry header to a GpuCode; None for entry kinds this tool does not know (skipped)."""
    (kind_id, header_version, _hsize, payload, compressed_size, _opt, minor, major, sm, _no, _nl, flags,
     _reserved, _uncompressed) = ENTRY_HEADER.unpack(header)  # fmt: skip
    kind = _KINDS.get(kind_id)
    if strict_kinds and (kind is None or header_version != ENTRY_HEADER_VERSION):
        raise FatbinFormatError(
            f"{container}: entry at {at:#x} has kind {kind_id} and header version {header_version:#x}"
        )
    if kind is None:
        return None
    if flags & FLAG_ARCH_SPECIFIC and flags & FLAG_FAMILY:
        raise FatbinFormatError(f"{container}: entry at {at:#x} is flagged both arch-specific and family")
    variant: GpuVariant = "a" if flags & FLAG_ARCH_SPECIFIC else ("f" if flags & FLAG_FAMILY else "")
    compressed = "zstd" if flags & FLAG_ZSTD else ("lz4" if flags & FLAG_LZ4 else None)
    return GpuCode(
        kind=kind,
        sm=sm,
        variant=variant,
        ptx_isa=f"{major}.{minor}" if kind == "ptx" else None,
        compressed=compressed,
        container=container,
        size=compressed_size if compressed and compressed_size else payload,
    )


def read_container(
    read: Reader, at: int, end: int, container: str, *, strict_kinds: bool = False
) -> tuple[list[GpuCode], int]:
    """Read the container starting at ``at`` (which must not reach past ``end``); return entries and its end.

    ``strict_kinds`` also rejects unknown entry kinds and header versions (used when validating a
    container found by scanning arbitrary data for the magic).
    """
    if at + CONTAINER_HEADER.size > end:
        raise FatbinFormatError(f"{container}: truncated fatbin container header at {at:#x}")
    magic, version, header_size, size = CONTAINER_HEADER.unpack(read(at, CONTAINER_HEADER.size))
    if magic != FATBIN_MAGIC:
        raise FatbinFormatError(f"{container}: no fatbin magic at {at:#x} (found {magic:#010x})")
    if version != CONTAINER_VERSION or header_size != CONTAINER_HEADER.size:
        raise FatbinFormatError(
            f"{container}: fatbin container at {at:#x} has version {version}, header size {header_size:#x}"
            f" (expected {CONTAINER_VERSION}, {CONTAINER_HEADER.size:#x})"
        )
    body = at + header_size
    container_end = body + size
    if container_end > end:
        raise FatbinFormatError(
            f"{container}: fatbin container at {at:#x} claims {size} bytes but only {end - body} remain"
        )
    codes: list[GpuCode] = []
    pos = body
    while pos < container_end:
        if pos + ENTRY_HEADER.size > container_end:
            raise FatbinFormatError(f"{container}: truncated fatbin entry header at {pos:#x}")
        raw = read(pos, ENTRY_HEADER.size)
        entry_header_size = struct.unpack_from("<I", raw, 4)[0]
        payload = struct.unpack_from("<Q", raw, 8)[0]
        if not ENTRY_HEADER.size <= entry_header_size <= MAX_ENTRY_HEADER:
            raise FatbinFormatError(
                f"{container}: fatbin entry at {pos:#x} has header size {entry_header_size:#x}"
            )
        next_pos = pos + entry_header_size + payload
        if next_pos > container_end:
            raise FatbinFormatError(
                f"{container}: fatbin entry at {pos:#x} claims {payload} bytes past its container's end"
            )
        code = _entry(raw, pos, container, strict_kinds)
        if code is not None:
            codes.append(code)
        pos = next_pos
    return codes, container_end


def _skip_zeros(read: Reader, origin: int, at: int, end: int) -> int:
    """Skip zero padding between containers; return the 8-aligned (from ``origin``) next offset or ``end``."""
    step = 16
    while at < end:
        chunk = read(at, min(step, end - at))
        step = _ZERO_CHUNK
        stripped = len(chunk) - len(chunk.lstrip(b"\0"))
        if stripped < len(chunk):
            found = at + stripped
            return origin + (found - origin) // 8 * 8
        at += len(chunk)
    return end


def walk_containers(read: Reader, start: int, end: int, container: str) -> list[GpuCode]:
    """Every entry of the containers concatenated in ``[start, end)``; zero padding between them is fine."""
    codes: list[GpuCode] = []
    at = _skip_zeros(read, start, start, end)
    while at < end:
        entries, at = read_container(read, at, end, container)
        codes.extend(entries)
        at = _skip_zeros(read, start, at, end)
    return codes


def scan_containers(read: Reader, start: int, end: int, container: str) -> list[GpuCode]:
    """Entries of valid containers found by their magic anywhere in ``[start, end)``; others are skipped."""
    codes: list[GpuCode] = []
    at = start
    while at < end:
        chunk = read(at, min(_SCAN_CHUNK, end - at))
        hit = chunk.find(FATBIN_MAGIC_BYTES)
        if hit < 0:
            at += max(len(chunk) - (len(FATBIN_MAGIC_BYTES) - 1), 1)
            continue
        candidate = at + hit
        try:
            entries, after = read_container(read, candidate, end, container, strict_kinds=True)
        except FatbinFormatError:
            at = candidate + 1
            continue
        codes.extend(entries)
        at = after
    return codes


def parse_fatbin(data: bytes | memoryview, container: str) -> tuple[GpuCode, ...]:
    """Entries of a run of concatenated fatbin containers (a ``.nv_fatbin`` section or ``nvcc -fatbin`` file).

    Raises FatbinFormatError on anything that is not such a run, including empty input.
    """
    view = memoryview(data).cast("B")
    size = view.nbytes
    read = ByteSource(view, container, error=FatbinFormatError).window(0, size, "the fatbin")
    codes = walk_containers(read, 0, size, container)
    if size == 0 or (not codes and _skip_zeros(read, 0, 0, size) >= size):
        raise FatbinFormatError(f"{container}: no fatbin container in {size} bytes")
    return tuple(codes)


__all__ = [
    "FATBIN_MAGIC",
    "FLAG_ARCH_SPECIFIC",
    "FLAG_FAMILY",
    "FLAG_LZ4",
    "FLAG_ZSTD",
    "parse_fatbin",
    "read_container",
    "scan_containers",
    "walk_containers",
]
