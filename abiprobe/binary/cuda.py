"""GPU code in ELF objects: fatbin containers in host libraries, and standalone cubins.

Reads section by section through :class:`abiprobe.binary.bounded.ByteSource` (the ELF reader's bounded
reader), so multi-gigabyte libraries are never loaded whole and a truncated or hostile file ends in one
format error; only fatbin headers are read, never payloads. ELF and section headers come from
:mod:`abiprobe.binary.elf_layout`; no pyelftools (``tools/compare_cuobjdump.py`` runs with only this package).
Rules deciding where the code runs live in :mod:`abiprobe.model.cuda_arch`; container walking in
:mod:`abiprobe.binary.cuda_fatbin`.
"""

from __future__ import annotations

import re
import struct
from typing import Final

from abiprobe.binary.bounded import BinaryInput, ByteSource, Reader, source_label
from abiprobe.binary.cuda_fatbin import FATBIN_MAGIC, parse_fatbin, scan_containers, walk_containers
from abiprobe.binary.elf_layout import ElfHeader, SectionHeader, read_header, read_sections
from abiprobe.errors import FatbinFormatError
from abiprobe.model.facts import GpuCode, GpuVariant

EM_CUDA: Final = 190
CUDA_MACHINE: Final = "cuda"  # EM_CUDA as ElfHeader.machine names it
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


def _section_reader(src: ByteSource, section: SectionHeader) -> Reader:
    """The section's bytes, offsets from its start (a section running past the file's end is an error)."""
    return src.window(section.offset, section.size, f"section {section.name}")


def _scanned(section: SectionHeader) -> bool:
    return (
        section.type == SHT_PROGBITS
        and not section.flags & SHF_EXECINSTR
        and section.size >= 16
        and section.name not in FATBIN_SECTIONS
        and section.name not in _NOT_SCANNED
        and not section.name.startswith((".debug", ".note", ".comment", ".gnu"))
    )


def gpu_code_of_elf(source: BinaryInput, path: str = "") -> tuple[GpuCode, ...]:
    """Every fatbin entry in an ELF object, or the single entry of a standalone cubin.

    ``.nv_fatbin`` and ``__nv_relfatbin`` must hold well-formed containers (else FatbinFormatError);
    other data sections are scanned for the fatbin magic and only containers that validate count.
    A truncated or inconsistent ELF is an ElfFormatError naming ``path``.
    """
    with ByteSource(source, source_label(source, path)) as src:
        header = read_header(src)
        if header.machine == CUDA_MACHINE:
            return (_cubin_code(src, header),)
        codes: list[GpuCode] = []
        for section in read_sections(src, header):
            if section.type == SHT_NOBITS or section.size == 0:
                continue
            if section.name in FATBIN_SECTIONS:
                read = _section_reader(src, section)
                try:
                    codes.extend(walk_containers(read, 0, section.size, section.name))
                except FatbinFormatError as exc:
                    raise FatbinFormatError(f"{src.label}: {exc}") from None
            elif _scanned(section):
                codes.extend(scan_containers(_section_reader(src, section), 0, section.size, section.name))
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


def _small_section(src: ByteSource, sections: tuple[SectionHeader, ...], name: str) -> bytes:
    for section in sections:
        if section.name == name and section.type != SHT_NOBITS:
            if section.size > _MAX_SMALL_SECTION:
                raise src.fail(f"bad ELF: cubin section {name} of {section.size} bytes is implausibly large")
            return src.read(section.offset, section.size, f"section {name}")
    return b""


def _cubin_code(src: ByteSource, header: ElfHeader) -> GpuCode:
    variant: GpuVariant = ""
    if header.abi_version >= 8:
        sm = (header.flags >> 8) & 0xFF
        sections = read_sections(src, header)
        tkinfo = _TKINFO_ARCH.search(_small_section(src, sections, ".note.nv.tkinfo"))
        if tkinfo is not None and tkinfo.group(2):
            variant = "a" if tkinfo.group(2) == b"a" else "f"
        elif _compat_arch_specific(_small_section(src, sections, ".nv.compat")):
            variant = "a"
    elif header.abi_version == 7 or header.osabi == 0x33:
        sm = header.flags & 0xFF
        variant = "a" if header.flags & 0x800 else ""
    else:
        raise src.fail(f"unknown cubin ABI (OS/ABI {header.osabi:#x}, ABI version {header.abi_version})")
    if sm == 0:
        raise src.fail(f"cubin e_flags {header.flags:#x} name no SM")
    return GpuCode(kind="sass", sm=sm, variant=variant, container=CUBIN_CONTAINER, size=src.size)


def read_cubin(source: BinaryInput, path: str = "") -> GpuCode:
    """The SM and variant of a standalone cubin (an ELF with e_machine EM_CUDA).

    ABI version 8 (CUDA 13, and ptxas 12.x for sm_100+): SM in e_flags bits 8-15; ``a``/``f`` from the
    ``-arch`` in ``.note.nv.tkinfo``, ``a`` also from ``.nv.compat``. ABI version 7: SM in the low byte
    and 0x800 marks ``a``.
    """
    with ByteSource(source, source_label(source, path)) as src:
        header = read_header(src)
        if header.machine != CUDA_MACHINE:
            raise src.fail(f"not a cubin: ELF machine {header.machine}, expected EM_CUDA ({EM_CUDA})")
        return _cubin_code(src, header)


__all__ = [
    "CUBIN_CONTAINER",
    "EM_CUDA",
    "FATBIN_MAGIC",
    "FATBIN_SECTIONS",
    "gpu_code_of_elf",
    "parse_fatbin",
    "read_cubin",
]
