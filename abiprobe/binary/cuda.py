"""GPU code in ELF objects: fatbin containers in host libraries, and standalone cubins.

Reads section by section with bounded reads from a seekable stream, so multi-gigabyte libraries are
never loaded whole; only fatbin headers are read, never payloads. Section headers come from
:mod:`abiprobe.binary.elf`; no pyelftools (``tools/compare_cuobjdump.py`` runs with only this package).
Rules deciding where the code runs live in :mod:`abiprobe.binary.cuda_arch`; container walking in
:mod:`abiprobe.binary.cuda_fatbin`.
"""

from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass
from typing import BinaryIO, Final

from abiprobe.binary.cuda_arch import (
    ArchStatus,
    ArchVerdict,
    GpuArch,
    arch_verdict,
    parse_arch,
    parse_ptx_isa,
    ptx_compiles_for,
    sass_runs_on,
)
from abiprobe.binary.cuda_fatbin import (
    FATBIN_MAGIC,
    Reader,
    parse_fatbin,
    scan_containers,
    walk_containers,
)
from abiprobe.binary.elf import list_sections
from abiprobe.binary.elf_layout import SectionHeader
from abiprobe.errors import ElfFormatError
from abiprobe.facts import GpuCode, GpuVariant

EM_CUDA: Final = 190
SHT_PROGBITS: Final = 1
SHT_NOBITS: Final = 8
SHF_EXECINSTR: Final = 0x4
FATBIN_SECTIONS: Final = (".nv_fatbin", "__nv_relfatbin")
CUBIN_CONTAINER: Final = "<cubin>"

# Allocated data sections that hold loader or unwinder structures, never an embedded fatbin.
_NOT_SCANNED: Final = frozenset(
    {".got", ".got.plt", ".init_array", ".fini_array", ".preinit_array", ".eh_frame", ".eh_frame_hdr",
     ".gcc_except_table", ".interp", ".tdata", ".data.rel.ro.local", "__nv_module_id", ".nvFatBinSegment"}
)  # fmt: skip
_MAX_SMALL_SECTION: Final = 64 << 20
_TKINFO_ARCH = re.compile(rb"-arch[ =]+(?:sm|compute)_(\d+)([af]?)(?![0-9A-Za-z])")
_COMPAT_ARCH_SPECIFIC: Final = 0x09


@dataclass(frozen=True)
class _Header:
    osabi: int
    abi_version: int
    machine: int
    flags: int


class _Stream:
    """Bounded, offset-checked reads over bytes or a seekable binary stream."""

    def __init__(self, source: bytes | bytearray | memoryview | BinaryIO) -> None:
        self.file: BinaryIO = (
            io.BytesIO(bytes(source)) if isinstance(source, (bytes, bytearray, memoryview)) else source
        )
        self.size = self.file.seek(0, io.SEEK_END)

    def read(self, offset: int, length: int) -> bytes:
        if offset < 0 or length <= 0 or offset >= self.size:
            return b""
        self.file.seek(offset)
        return self.file.read(min(length, self.size - offset))

    def exact(self, offset: int, length: int, what: str) -> bytes:
        data = self.read(offset, length)
        if len(data) != length:
            raise ElfFormatError(f"truncated ELF: {what} at {offset:#x} needs {length} bytes")
        return data


def _read_header(stream: _Stream) -> _Header:
    ident = stream.read(0, 16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF":
        raise ElfFormatError("not an ELF file (bad magic)")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ElfFormatError(f"unsupported ELF class {ident[4]} / data encoding {ident[5]}")
    bits = 64 if ident[4] == 2 else 32
    endian = "<" if ident[5] == 1 else ">"
    layout = "HHIQQQIHHHHHH" if bits == 64 else "HHIIIIIHHHHHH"
    fmt = struct.Struct(endian + layout)
    _type, machine, _version, _entry, _phoff, _shoff, flags, *_ = fmt.unpack(
        stream.exact(16, fmt.size, "ELF header")
    )
    return _Header(ident[7], ident[8], machine, flags)


def _sections(stream: _Stream) -> tuple[SectionHeader, ...]:
    """Name, type, offset, size and flags of every section (shared reader in :mod:`abiprobe.binary.elf`)."""
    return list_sections(stream.file)


def _section_reader(stream: _Stream, section: SectionHeader) -> Reader:
    if section.offset + section.size > stream.size:
        raise ElfFormatError(
            f"section {section.name} ({section.size} bytes at {section.offset:#x}) runs past the file's end"
        )
    base = section.offset

    def read(offset: int, length: int) -> bytes:
        if offset < 0 or offset >= section.size:
            return b""
        return stream.read(base + offset, min(length, section.size - offset))

    return read


def _scanned(section: SectionHeader) -> bool:
    return (
        section.type == SHT_PROGBITS
        and not section.flags & SHF_EXECINSTR
        and section.size >= 16
        and section.name not in FATBIN_SECTIONS
        and section.name not in _NOT_SCANNED
        and not section.name.startswith((".debug", ".note", ".comment", ".gnu"))
    )


def gpu_code_of_elf(source: bytes | BinaryIO) -> tuple[GpuCode, ...]:
    """Every fatbin entry in an ELF object, or the single entry of a standalone cubin.

    ``.nv_fatbin`` and ``__nv_relfatbin`` must hold well-formed containers (else FatbinFormatError);
    other data sections are scanned for the fatbin magic and only containers that validate count.
    """
    stream = _Stream(source)
    header = _read_header(stream)
    if header.machine == EM_CUDA:
        return (_cubin_code(stream, header),)
    codes: list[GpuCode] = []
    for section in _sections(stream):
        if section.type == SHT_NOBITS or section.size == 0:
            continue
        if section.name in FATBIN_SECTIONS:
            codes.extend(walk_containers(_section_reader(stream, section), 0, section.size, section.name))
        elif _scanned(section):
            codes.extend(scan_containers(_section_reader(stream, section), 0, section.size, section.name))
    return tuple(codes)


def _compat_arch_specific(data: bytes) -> bool:
    """Whether ``.nv.compat`` attribute 0x09 (set by ptxas for ``sm_XXa``) is non-zero.

    Records are ``u8 format, u8 attribute, u16 value``; format 4 is followed by ``value`` bytes.
    """
    pos = 0
    while pos + 4 <= len(data):
        fmt, attr, value = struct.unpack_from("<BBH", data, pos)
        if attr == _COMPAT_ARCH_SPECIFIC and fmt in (1, 2, 3):
            return bool(value)
        pos += 4 + (value if fmt == 4 else 0)
    return False


def _small_section(stream: _Stream, sections: tuple[SectionHeader, ...], name: str) -> bytes:
    for section in sections:
        if section.name == name and section.type != SHT_NOBITS:
            if section.size > _MAX_SMALL_SECTION:
                raise ElfFormatError(f"cubin section {name} of {section.size} bytes is implausibly large")
            return stream.exact(section.offset, section.size, f"section {name}")
    return b""


def _cubin_code(stream: _Stream, header: _Header) -> GpuCode:
    variant: GpuVariant = ""
    if header.abi_version >= 8:
        sm = (header.flags >> 8) & 0xFF
        sections = _sections(stream)
        tkinfo = _TKINFO_ARCH.search(_small_section(stream, sections, ".note.nv.tkinfo"))
        if tkinfo is not None and tkinfo.group(2):
            variant = "a" if tkinfo.group(2) == b"a" else "f"
        elif _compat_arch_specific(_small_section(stream, sections, ".nv.compat")):
            variant = "a"
    elif header.abi_version == 7 or header.osabi == 0x33:
        sm = header.flags & 0xFF
        variant = "a" if header.flags & 0x800 else ""
    else:
        raise ElfFormatError(
            f"unknown cubin ABI (OS/ABI {header.osabi:#x}, ABI version {header.abi_version})"
        )
    if sm == 0:
        raise ElfFormatError(f"cubin e_flags {header.flags:#x} name no SM")
    return GpuCode(kind="sass", sm=sm, variant=variant, container=CUBIN_CONTAINER, size=stream.size)


def read_cubin(source: bytes | BinaryIO) -> GpuCode:
    """The SM and variant of a standalone cubin (an ELF with e_machine EM_CUDA).

    ABI version 8 (CUDA 13, and ptxas 12.x for sm_100+): SM in e_flags bits 8-15; ``a``/``f`` from the
    ``-arch`` in ``.note.nv.tkinfo``, ``a`` also from ``.nv.compat``. ABI version 7: SM in the low byte
    and 0x800 marks ``a``.
    """
    stream = _Stream(source)
    header = _read_header(stream)
    if header.machine != EM_CUDA:
        raise ElfFormatError(f"not a cubin: ELF machine {header.machine}, expected {EM_CUDA} (EM_CUDA)")
    return _cubin_code(stream, header)


__all__ = [
    "CUBIN_CONTAINER",
    "EM_CUDA",
    "FATBIN_MAGIC",
    "FATBIN_SECTIONS",
    "ArchStatus",
    "ArchVerdict",
    "GpuArch",
    "arch_verdict",
    "gpu_code_of_elf",
    "parse_arch",
    "parse_fatbin",
    "parse_ptx_isa",
    "ptx_compiles_for",
    "read_cubin",
    "sass_runs_on",
]
