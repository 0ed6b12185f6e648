"""ELF file layout: header, program headers, section headers and virtual-address mapping.

Everything here reads only the few bytes it needs from a bounded source, so a hostile header can never
make a read run past the end of the file or allocate more than the file could hold.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import struct
from dataclasses import dataclass
from typing import BinaryIO, TypeAlias

from abiprobe.errors import ElfFormatError

ElfSource: TypeAlias = bytes | bytearray | memoryview | mmap.mmap | BinaryIO

PT_LOAD = 1
PT_DYNAMIC = 2
PN_XNUM = 0xFFFF
SHN_XINDEX = 0xFFFF
MAX_SECTIONS = 1 << 16
MAX_SEGMENTS = 1 << 16

_MACHINES: dict[int, str] = {
    2: "sparc",
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390",
    40: "arm",
    43: "sparcv9",
    62: "x86_64",
    183: "aarch64",
    190: "cuda",
    224: "amdgpu",
    243: "riscv",
    258: "loongarch",
}
_TYPES: dict[int, str] = {0: "NONE", 1: "REL", 2: "EXEC", 3: "DYN", 4: "CORE"}


Searchable: TypeAlias = bytes | bytearray | mmap.mmap


class NeedBytes(Exception):  # a request for more input, not an error
    """A read reached past the bytes available so far (of a file being inflated): ``end`` is how many
    bytes from the start it needs."""

    def __init__(self, end: int) -> None:
        super().__init__(end)
        self.end = end


class ByteSource:
    """Bounded random access over bytes, an mmap or a seekable stream; every short read is an error.

    A stream backed by a regular file is memory-mapped read-only, so big tables are used in place
    (page-cache pages) instead of being copied; other streams are read with seek + read.

    With ``size`` the source holds only the first bytes of a file of that size (a member still being
    inflated): a read inside the file but past the bytes held raises :class:`NeedBytes`.
    """

    def __init__(self, source: ElfSource, label: str, size: int | None = None) -> None:
        self.label = label
        self._buf: Searchable | memoryview | None = None
        self._stream: BinaryIO | None = None
        self._owned_map: mmap.mmap | None = None
        if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
            self._buf = source
            self.size = source.nbytes if isinstance(source, memoryview) else len(source)
        else:
            self._owned_map = _map_file(source)
            if self._owned_map is not None:
                self._buf = self._owned_map
                self.size = len(self._owned_map)
            else:
                self._stream = source
                try:
                    self.size = source.seek(0, os.SEEK_END)
                except (OSError, ValueError) as exc:
                    raise ElfFormatError(f"{label}: cannot seek in ELF stream: {exc}") from None
        self.held = self.size
        if size is not None:
            self.held, self.size = min(self.size, size), size

    def close(self) -> None:
        """Unmap a mapping this source made itself (left to the collector while views still exist)."""
        if self._owned_map is not None:
            with contextlib.suppress(BufferError):
                self._owned_map.close()

    def fail(self, message: str) -> ElfFormatError:
        return ElfFormatError(f"{self.label}: {message}")

    def check(self, offset: int, length: int, what: str) -> None:
        """Raise unless ``[offset, offset+length)`` lies inside the file."""
        if offset < 0 or length < 0:
            raise self.fail(f"bad ELF: {what} has a negative offset or size")
        if offset + length > self.size:
            raise self.fail(f"truncated ELF: {what} runs past end of file")
        if offset + length > self.held:
            raise NeedBytes(offset + length)

    def read(self, offset: int, length: int, what: str) -> bytes:
        self.check(offset, length, what)
        if self._buf is not None:
            return bytes(self._buf[offset : offset + length])
        assert self._stream is not None
        try:
            self._stream.seek(offset)
            data = self._stream.read(length)
        except (OSError, ValueError) as exc:
            raise self.fail(f"cannot read {what}: {exc}") from None
        if len(data) != length:
            raise self.fail(f"truncated ELF: {what} runs past end of file")
        return data

    def view(self, offset: int, length: int, what: str) -> memoryview:
        """The bytes at ``offset`` without copying them where the source is already in memory."""
        if self._buf is None:
            return memoryview(self.read(offset, length, what))
        self.check(offset, length, what)
        return memoryview(self._buf)[offset : offset + length]

    def searchable(self, offset: int, length: int, what: str) -> tuple[Searchable, int]:
        """A buffer with ``find`` holding the range, and the range's start in it (in place if possible)."""
        self.check(offset, length, what)
        if self._buf is not None and not isinstance(self._buf, memoryview):
            return self._buf, offset
        return self.read(offset, length, what), 0


def _map_file(source: BinaryIO) -> mmap.mmap | None:
    try:
        fd = source.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size == 0:
            return None
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError, AttributeError):
        return None


@dataclass(frozen=True)
class ElfHeader:
    """The fields of the ELF file header that the dynamic reader needs."""

    elf_class: int
    endian: str  # "<" or ">"
    osabi: int
    elf_type: str
    machine: str
    flags: int
    phoff: int
    phentsize: int
    phnum: int
    shoff: int
    shentsize: int
    shnum: int
    shstrndx: int

    @property
    def word(self) -> str:
        return "Q" if self.elf_class == 64 else "I"


@dataclass(frozen=True)
class Segment:
    """One program header."""

    type: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: int


@dataclass(frozen=True)
class SectionHeader:
    """One section header, with its name resolved from the section-name string table."""

    name: str
    type: int
    offset: int
    size: int
    flags: int
    addr: int = 0
    link: int = 0
    info: int = 0
    entsize: int = 0


def machine_name(e_machine: int, elf_class: int, endian: str) -> str:
    name = _MACHINES.get(e_machine, f"em_{e_machine}")
    if name == "ppc64" and endian == "<":
        return "ppc64le"
    if name in ("s390", "riscv", "loongarch") and elf_class == 64:
        return {"s390": "s390x", "riscv": "riscv64", "loongarch": "loongarch64"}[name]
    if name in ("riscv", "loongarch"):
        return name + "32"
    return name


def read_header(src: ByteSource) -> ElfHeader:
    """Decode and sanity-check the ELF identification and file header."""
    if src.size < 16:
        raise src.fail("not an ELF file (too short)" if src.size else "not an ELF file (empty)")
    ident = src.read(0, 16, "ELF identification")
    if ident[:4] != b"\x7fELF":
        raise src.fail("not an ELF file (bad magic)")
    if ident[4] not in (1, 2):
        raise src.fail(f"bad ELF: unknown class byte {ident[4]}")
    if ident[5] not in (1, 2):
        raise src.fail(f"bad ELF: unknown data-encoding byte {ident[5]}")
    elf_class = 32 if ident[4] == 1 else 64
    endian = "<" if ident[5] == 1 else ">"
    fmt = endian + ("HHIIIIIHHHHHH" if elf_class == 32 else "HHIQQQIHHHHHH")
    size = struct.calcsize(fmt)
    fields = struct.unpack(fmt, src.read(16, size, "ELF header"))
    e_type, e_machine, _ver, _entry, phoff, shoff, flags, _ehsize, phentsize, phnum = fields[:10]
    shentsize, shnum, shstrndx = fields[10:]
    return ElfHeader(
        elf_class=elf_class,
        endian=endian,
        osabi=ident[7],
        elf_type=_TYPES.get(e_type, f"0x{e_type:x}"),
        machine=machine_name(e_machine, elf_class, endian),
        flags=flags,
        phoff=phoff,
        phentsize=phentsize,
        phnum=phnum,
        shoff=shoff,
        shentsize=shentsize,
        shnum=shnum,
        shstrndx=shstrndx,
    )


def _section_zero(src: ByteSource, hdr: ElfHeader) -> tuple[int, int, int]:
    """(sh_size, sh_link, sh_info) of section 0, where extended counts live; zeros if absent."""
    if hdr.shoff == 0:
        return 0, 0, 0
    raw = _raw_sections(src, hdr, 1)
    return (raw[0][5], raw[0][6], raw[0][7]) if raw else (0, 0, 0)


def read_segments(src: ByteSource, hdr: ElfHeader) -> tuple[Segment, ...]:
    """Decode the program header table (empty when the file has none)."""
    count = hdr.phnum
    if count == PN_XNUM:
        count = _section_zero(src, hdr)[2]
    if hdr.phoff == 0 or count == 0:
        return ()
    fmt = hdr.endian + ("IIIIIIII" if hdr.elf_class == 32 else "IIQQQQQQ")
    entsize = struct.calcsize(fmt)
    if hdr.phentsize < entsize:
        raise src.fail(f"bad ELF: program header entry size {hdr.phentsize} is too small")
    if count > MAX_SEGMENTS:
        raise src.fail(f"bad ELF: {count} program headers")
    data = src.read(hdr.phoff, hdr.phentsize * count, "program header table")
    out = []
    for i in range(count):
        f = struct.unpack_from(fmt, data, i * hdr.phentsize)
        if hdr.elf_class == 32:
            p_type, p_offset, p_vaddr, _pa, p_filesz, p_memsz, p_flags, _al = f
        else:
            p_type, p_flags, p_offset, p_vaddr, _pa, p_filesz, p_memsz, _al = f
        out.append(Segment(p_type, p_offset, p_vaddr, p_filesz, p_memsz, p_flags))
    return tuple(out)


def _raw_sections(src: ByteSource, hdr: ElfHeader, count: int) -> list[tuple[int, ...]]:
    fmt = hdr.endian + ("IIIIIIIIII" if hdr.elf_class == 32 else "IIQQQQIIQQ")
    entsize = struct.calcsize(fmt)
    if hdr.shentsize < entsize:
        raise src.fail(f"bad ELF: section header entry size {hdr.shentsize} is too small")
    data = src.read(hdr.shoff, hdr.shentsize * count, "section header table")
    return [struct.unpack_from(fmt, data, i * hdr.shentsize) for i in range(count)]


def read_sections(src: ByteSource, hdr: ElfHeader) -> tuple[SectionHeader, ...]:
    """Decode the section header table with names; empty when the file has none."""
    if hdr.shoff == 0:
        return ()
    count, strndx = hdr.shnum, hdr.shstrndx
    if count == 0 or strndx == SHN_XINDEX:
        size0, link0, _ = _section_zero(src, hdr)
        count = count or size0
        strndx = link0 if strndx == SHN_XINDEX else strndx
    if count == 0:
        return ()
    if count > MAX_SECTIONS:
        raise src.fail(f"bad ELF: {count} section headers")
    raw = _raw_sections(src, hdr, count)
    names = b""
    if 0 < strndx < count:
        str_off, str_size = raw[strndx][4], raw[strndx][5]
        if raw[strndx][1] != 8:  # SHT_NOBITS has no bytes in the file
            names = src.read(str_off, str_size, "section name table")
    out = []
    for name_off, sh_type, flags, addr, offset, size, link, info, _align, entsize in raw:
        out.append(
            SectionHeader(
                name=cstring(names, name_off),
                type=sh_type,
                offset=offset,
                size=size,
                flags=flags,
                addr=addr,
                link=link,
                info=info,
                entsize=entsize,
            )
        )
    return tuple(out)


def cstring(blob: bytes, offset: int) -> str:
    """The NUL-terminated string at ``offset``; empty when the offset lies outside ``blob``."""
    if offset < 0 or offset >= len(blob):
        return ""
    end = blob.find(b"\0", offset)
    return blob[offset : end if end >= 0 else len(blob)].decode("utf-8", "backslashreplace")


class AddressMap:
    """Maps link-time virtual addresses to file offsets through the PT_LOAD segments."""

    def __init__(self, src: ByteSource, segments: tuple[Segment, ...]) -> None:
        self._src = src
        self._loads = sorted((s.vaddr, s.filesz, s.offset) for s in segments if s.type == PT_LOAD)

    def fail(self, message: str) -> ElfFormatError:
        return self._src.fail(message)

    def offset(self, vaddr: int, length: int, what: str) -> int:
        """File offset of ``[vaddr, vaddr+length)``, which must lie in one segment's file image."""
        for start, filesz, offset in self._loads:
            if start <= vaddr < start + filesz or (length == 0 and vaddr == start + filesz):
                if vaddr + length > start + filesz:
                    raise self._src.fail(f"bad ELF: {what} runs past the end of its loaded segment")
                file_off = offset + (vaddr - start)
                self._src.check(file_off, length, what)
                return file_off
        raise self._src.fail(f"bad ELF: {what} at address 0x{vaddr:x} is not in any loaded segment")

    def room(self, vaddr: int) -> int:
        """Bytes of file image from ``vaddr`` to the end of its loaded segment (0 when unmapped)."""
        for start, filesz, offset in self._loads:
            if start <= vaddr < start + filesz:
                file_off = offset + (vaddr - start)
                return max(0, min(start + filesz - vaddr, self._src.size - file_off))
        return 0

    def read(self, vaddr: int, length: int, what: str) -> bytes:
        return self._src.read(self.offset(vaddr, length, what), length, what)

    def view(self, vaddr: int, length: int, what: str) -> memoryview:
        return self._src.view(self.offset(vaddr, length, what), length, what)

    def searchable(self, vaddr: int, length: int, what: str) -> tuple[Searchable, int]:
        return self._src.searchable(self.offset(vaddr, length, what), length, what)
