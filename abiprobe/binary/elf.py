"""Read what the dynamic loader sees in an ELF object: soname, needed, search paths, symbols, versions.

One path serves every layout: program headers -> PT_DYNAMIC -> tables addressed through PT_LOAD. It
never needs section headers, so stripped objects and patchelf'd objects (tables moved to the end of the
file) read the same way, and only the bytes of the tables themselves are read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from abiprobe.binary.bounded import BinaryInput, ByteSource, NeedBytes, source_label
from abiprobe.binary.elf_dynsym import (
    MAX_TABLE_BYTES,
    StringTable,
    VersionTables,
    count_from_gnu_hash,
    count_from_hash,
    count_from_sections,
    read_symbols,
    read_versions,
    relocation_symbols,
)
from abiprobe.binary.elf_layout import (
    PT_DYNAMIC,
    AddressMap,
    ElfHeader,
    SectionHeader,
    read_header,
    read_sections,
    read_segments,
)
from abiprobe.errors import ElfFormatError
from abiprobe.model.facts import ElfFacts, SymbolExport, SymbolImport

DT_NULL = 0
DT_NEEDED = 1
DT_PLTRELSZ = 2
DT_HASH = 4
DT_STRTAB = 5
DT_SYMTAB = 6
DT_RELA = 7
DT_RELASZ = 8
DT_RELAENT = 9
DT_STRSZ = 10
DT_SYMENT = 11
DT_SONAME = 14
DT_RPATH = 15
DT_REL = 17
DT_RELSZ = 18
DT_RELENT = 19
DT_PLTREL = 20
DT_JMPREL = 23
DT_RELACOUNT = 0x6FFFFFF9
DT_RELCOUNT = 0x6FFFFFFA
DT_RUNPATH = 29
DT_GNU_HASH = 0x6FFFFEF5
DT_VERSYM = 0x6FFFFFF0
DT_VERDEF = 0x6FFFFFFC
DT_VERDEFNUM = 0x6FFFFFFD
DT_VERNEED = 0x6FFFFFFE
DT_VERNEEDNUM = 0x6FFFFFFF
MAX_DYNAMIC_BYTES = 1 << 20
_LISTED_TAGS = (DT_NEEDED, DT_RPATH, DT_RUNPATH)


@dataclass(frozen=True)
class DynamicTable:
    """The PT_DYNAMIC entries: the first value of each single-valued tag, and the listed ones in order."""

    single: dict[int, int]
    listed: dict[int, tuple[int, ...]]

    def get(self, tag: int) -> int | None:
        return self.single.get(tag)


def read_elf(source: BinaryInput, path: str = "") -> ElfFacts:
    """Read the dynamic facts of one ELF object from bytes, an mmap or a seekable binary stream."""
    label = source_label(source, path)
    src = ByteSource(source, label)
    try:
        return _read(src, path or label)
    except (struct.error, ValueError, OverflowError, IndexError) as exc:
        raise src.fail(f"bad ELF: inconsistent dynamic tables ({type(exc).__name__})") from None
    finally:
        src.close()


def read_elf_prefix(source: BinaryInput, size: int, path: str) -> ElfFacts | int:
    """The loader facts of an ELF object of ``size`` bytes from its first bytes only (``source``), or,
    when they do not reach every table the facts need, how many bytes from the start would. The facts
    say ``gpu_unread``: GPU code is never looked for in a prefix."""
    src = ByteSource(source, path, size=size)
    try:
        facts = _read(src, path)
    except NeedBytes as more:
        return more.end
    except (struct.error, ValueError, OverflowError, IndexError) as exc:
        raise src.fail(f"bad ELF: inconsistent dynamic tables ({type(exc).__name__})") from None
    finally:
        src.close()
    return replace(facts, gpu_unread=True, size=size)


def list_sections(source: BinaryInput, path: str = "") -> tuple[SectionHeader, ...]:
    """The section headers with their names; an empty tuple when the object has none."""
    src = ByteSource(source, source_label(source, path))
    try:
        return read_sections(src, read_header(src))
    except (struct.error, ValueError, OverflowError, IndexError) as exc:
        raise src.fail(f"bad ELF: inconsistent section headers ({type(exc).__name__})") from None
    finally:
        src.close()


def _read(src: ByteSource, path: str) -> ElfFacts:
    hdr = read_header(src)
    segments = read_segments(src, hdr)
    basic = ElfFacts(
        path=path, elf_class=hdr.elf_class, machine=hdr.machine, elf_type=hdr.elf_type, size=src.size
    )
    dyn_segment = next((s for s in segments if s.type == PT_DYNAMIC), None)
    if dyn_segment is None:
        return basic
    if dyn_segment.filesz > MAX_DYNAMIC_BYTES:
        raise src.fail(f"bad ELF: dynamic segment of {dyn_segment.filesz} bytes is implausibly large")
    dynamic = read_dynamic(hdr, src.read(dyn_segment.offset, dyn_segment.filesz, "dynamic segment"))
    amap = AddressMap(src, segments)
    strings = _string_table(src, amap, dynamic)
    if strings is None:
        return basic
    versions = read_versions(
        amap,
        hdr,
        strings,
        dynamic.get(DT_VERDEF),
        dynamic.get(DT_VERDEFNUM),
        dynamic.get(DT_VERNEED),
        dynamic.get(DT_VERNEEDNUM),
    )
    exports, imports, import_indexes = _symbols(src, amap, hdr, strings, dynamic, versions)
    soname_off = dynamic.get(DT_SONAME)
    return ElfFacts(
        path=path,
        elf_class=hdr.elf_class,
        machine=hdr.machine,
        elf_type=hdr.elf_type,
        soname=None if soname_off is None else strings.get(soname_off, "soname"),
        needed=tuple(strings.get(off, "needed library") for off in dynamic.listed[DT_NEEDED]),
        rpath=_search_path(strings, dynamic.listed[DT_RPATH], "rpath"),
        runpath=_search_path(strings, dynamic.listed[DT_RUNPATH], "runpath"),
        exports=exports,
        imports=imports,
        version_needs=versions.need_list,
        version_defs=versions.def_names,
        binding_order=binding_order(amap, hdr, dynamic, import_indexes),
        size=src.size,
    )


def binding_order(
    amap: AddressMap, hdr: ElfHeader, dynamic: DynamicTable, import_indexes: list[int]
) -> tuple[int, ...]:
    """Indexes into the imports, in the order ld.so first looks each up when it relocates the object
    with RTLD_NOW: the DT_REL table, then DT_RELA (each after its leading relative entries, which name
    no symbol), then DT_JMPREL, entries in table order. An import no relocation names is never looked up."""
    position = {sym: i for i, sym in enumerate(import_indexes)}
    if not position:
        return ()
    plt_rela = dynamic.get(DT_PLTREL) == DT_RELA
    tables = (
        (DT_REL, DT_RELSZ, DT_RELENT, False, DT_RELCOUNT),
        (DT_RELA, DT_RELASZ, DT_RELAENT, True, DT_RELACOUNT),
        (DT_JMPREL, DT_PLTRELSZ, DT_RELAENT if plt_rela else DT_RELENT, plt_rela, None),
    )
    order: dict[int, None] = {}
    for addr_tag, size_tag, ent_tag, rela, count_tag in tables:
        vaddr, size = dynamic.get(addr_tag), dynamic.get(size_tag)
        if vaddr is None or not size:
            continue
        skip = dynamic.get(count_tag) or 0 if count_tag is not None else 0
        symbols = relocation_symbols(amap, hdr, vaddr, size, dynamic.get(ent_tag) or 0, rela, skip)
        order.update(dict.fromkeys(p for sym in symbols if (p := position.get(sym)) is not None))
    return tuple(order)


def read_dynamic(hdr: ElfHeader, data: bytes) -> DynamicTable:
    """Decode dynamic entries up to DT_NULL (or the end of the segment)."""
    fmt = hdr.endian + ("iI" if hdr.elf_class == 32 else "qQ")
    entsize = struct.calcsize(fmt)
    single: dict[int, int] = {}
    listed: dict[int, list[int]] = {tag: [] for tag in _LISTED_TAGS}
    for tag, value in struct.iter_unpack(fmt, data[: len(data) // entsize * entsize]):
        if tag == DT_NULL:
            break
        if tag in listed:
            listed[tag].append(value)
        else:
            single.setdefault(tag, value)
    return DynamicTable(single, {tag: tuple(values) for tag, values in listed.items()})


def _string_table(src: ByteSource, amap: AddressMap, dynamic: DynamicTable) -> StringTable | None:
    strtab = dynamic.get(DT_STRTAB)
    if strtab is None:
        uses_strings = any(dynamic.listed.values()) or dynamic.get(DT_SONAME) is not None
        if uses_strings or dynamic.get(DT_SYMTAB) is not None:
            raise src.fail("bad ELF: dynamic section names strings but has no DT_STRTAB")
        return None
    size = dynamic.get(DT_STRSZ)
    if size is None:
        size = amap.room(strtab)
    if size > MAX_TABLE_BYTES:
        raise src.fail(f"bad ELF: dynamic string table of {size} bytes is implausibly large")
    buf, base = amap.searchable(strtab, size, "dynamic string table")
    return StringTable(src, buf, base, size, amap.view(strtab, size, "dynamic string table"))


def _symbol_count(src: ByteSource, amap: AddressMap, hdr: ElfHeader, dynamic: DynamicTable) -> int:
    """How many dynamic symbols there are: DT_HASH, else DT_GNU_HASH, else section headers."""
    hash_at = dynamic.get(DT_HASH)
    if hash_at is not None:
        return count_from_hash(amap, hdr, hash_at)
    gnu_hash_at = dynamic.get(DT_GNU_HASH)
    if gnu_hash_at is not None:
        return count_from_gnu_hash(amap, hdr, gnu_hash_at)
    symtab = dynamic.get(DT_SYMTAB) or 0
    count = count_from_sections(read_sections(src, hdr), symtab)
    if count is None:
        raise src.fail("bad ELF: no DT_HASH, DT_GNU_HASH or section header sizes the dynamic symbol table")
    return count


def _symbols(
    src: ByteSource,
    amap: AddressMap,
    hdr: ElfHeader,
    strings: StringTable,
    dynamic: DynamicTable,
    versions: VersionTables,
) -> tuple[tuple[SymbolExport, ...], tuple[SymbolImport, ...], list[int]]:
    symtab = dynamic.get(DT_SYMTAB)
    if symtab is None:
        return (), (), []
    syment = dynamic.get(DT_SYMENT) or (16 if hdr.elf_class == 32 else 24)
    count = _symbol_count(src, amap, hdr, dynamic)
    return read_symbols(amap, hdr, strings, symtab, count, syment, dynamic.get(DT_VERSYM), versions)


def _search_path(strings: StringTable, offsets: tuple[int, ...], what: str) -> tuple[str, ...]:
    """DT_RPATH / DT_RUNPATH split on ':', with ``$ORIGIN`` and friends kept literally."""
    out: list[str] = []
    for off in offsets:
        value = strings.get(off, what)
        if value:
            out.extend(value.split(":"))
    return tuple(out)


__all__ = ["BinaryInput", "ElfFormatError", "SectionHeader", "list_sections", "read_elf"]
