"""ELF file layout: header, program headers, section headers and virtual-address mapping.

Everything here reads only the few bytes it needs through :class:`abiprobe.binary.bounded.ByteSource`, so a
hostile header can never make a read run past the end of the file or allocate more than the file could hold.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from abiprobe.binary.bounded import ByteSource, Searchable
from abiprobe.errors import BinaryFormatError

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


@dataclass(frozen=True)
class ElfHeader:
    """The fields of the ELF file header that the dynamic reader needs."""

    elf_class: int
    endian: str  # "<" or ">"
    osabi: int
    abi_version: int
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
        abi_version=ident[8],
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

    def fail(self, message: str) -> BinaryFormatError:
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
