"""Dynamic symbol table, symbol count from the hash tables, and the GNU symbol-version tables.

The symbol table is decoded in bulk (``struct.iter_unpack`` over one read, versym as one array) because
the libraries this tool cares about carry tens of thousands of dynamic symbols.
"""

from __future__ import annotations

import operator
import struct
import sys
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, fields
from functools import cached_property
from itertools import compress, repeat

from abiprobe.binary.bounded import ByteSource, Searchable
from abiprobe.binary.elf_layout import AddressMap, ElfHeader, SectionHeader
from abiprobe.model.facts import SymbolExport, SymbolImport, VersionNeed

MAX_SYMBOLS = 1 << 24
MAX_TABLE_BYTES = 256 << 20
MAX_VERSION_ENTRIES = 1 << 16
_CHAIN_CHUNK = 1 << 16
_SHT_DYNSYM = 11
_VER_FLG_BASE = 1
# Build one instance the ordinary way so the class's shared key table holds every field: instances
# built in bulk below then get compact inline attribute storage instead of one dict each.
_KEY_TABLE_PRIMER = SymbolExport("", None, True, "FUNC", "GLOBAL")
_NO_DEFAULT = object()
_EXPORT_DEFAULTS = {f.name: f.default for f in fields(SymbolExport) if f.default is not MISSING}
_NONZERO = bytes([0] + [1] * 255)
_FLIP = bytes([1, 0]) + bytes(254)
_ODD_TO_ONE = bytes(i & 1 for i in range(256))
_KINDS = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 5: "OBJECT", 6: "TLS", 10: "IFUNC"}
_BINDINGS = {1: "GLOBAL", 2: "WEAK", 10: "GNU_UNIQUE"}
_KIND_OF_INFO = tuple(_KINDS.get(i & 0xF) for i in range(256))
_BINDING_OF_INFO = tuple(_BINDINGS.get(i >> 4) for i in range(256))
_EXPORT_INFO = bytes(int(i >> 4 in _BINDINGS and i & 0xF in _KINDS) for i in range(256))
_NON_LOCAL = bytes(int(i >> 4 != 0) for i in range(256))
_VISIBLE = bytes(int(i & 3 not in (1, 2)) for i in range(256))  # the loader never binds hidden/internal
_KIND_DIFFERS = bytes(int(k != _EXPORT_DEFAULTS.get("kind", _NO_DEFAULT)) for k in _KIND_OF_INFO)
_BINDING_DIFFERS = bytes(int(b != _EXPORT_DEFAULTS.get("binding", _NO_DEFAULT)) for b in _BINDING_OF_INFO)


@dataclass(frozen=True)
class VersionTables:
    """Decoded .gnu.version_d / .gnu.version_r: index -> name (and file) plus the ordered listings."""

    defs: dict[int, str]
    def_names: tuple[str, ...]
    needs: dict[int, tuple[str, str]]
    need_list: tuple[VersionNeed, ...]

    @cached_property
    def export_names(self) -> dict[int, str]:
        """Raw versym value (hidden bit included) of a defined symbol -> its version name."""
        names = {idx: name for idx, (name, _file) in self.needs.items() if idx > 1}
        names.update((idx, name) for idx, name in self.defs.items() if idx > 1)
        names.update([(idx | 0x8000, name) for idx, name in names.items()])
        return names

    @cached_property
    def export_hidden(self) -> dict[int, bool]:
        """Raw versym values whose symbol is a hidden ``name@VER`` (``default`` False)."""
        return {raw: False for raw in self.export_names if raw & 0x8000}


_decode: Callable[..., str] = str


class StringTable:
    """The dynamic string table, searched in place in the source buffer where it can be."""

    def __init__(self, src: ByteSource, buf: Searchable, base: int, size: int, view: memoryview) -> None:
        self._src = src
        self._buf = buf
        self._base = base
        self._size = size
        self._view = view
        self._cache: dict[int, str] = {}

    @cached_property
    def _text(self) -> str | None:
        """The whole table decoded once when it is ASCII, so names are cut as str slices."""
        try:
            return str(self._view, "ascii")
        except UnicodeDecodeError:
            return None

    def names(self, column: Sequence[int], selected: bytes | bytearray, what: str) -> list[str]:
        """Names at the selected offsets of ``column``, cut with lazy C-level maps and no temporaries."""
        highest = max(compress(column, selected), default=-1)
        if highest >= self._size:
            raise self._src.fail(f"bad ELF: {what} name offset {highest} lies past the dynamic string table")
        buf, base, end = self._buf, self._base, self._base + self._size
        if highest + base > buf.rfind(b"\0", base, end):
            raise self._src.fail(f"bad ELF: {what} name is not terminated inside the dynamic string table")
        text = self._text
        if text is not None:
            text_ends = map(text.find, repeat("\0"), compress(column, selected))
            return list(map(text.__getitem__, map(slice, compress(column, selected), text_ends)))
        starts = map(base.__add__, compress(column, selected))
        ends = map(buf.find, repeat(b"\0"), starts, repeat(end))
        raw = map(buf.__getitem__, map(slice, map(base.__add__, compress(column, selected)), ends))
        return list(map(_decode, raw, repeat("utf-8"), repeat("backslashreplace")))

    def get(self, offset: int, what: str) -> str:
        name = self._cache.get(offset)
        if name is not None:
            return name
        if offset >= self._size:
            raise self._src.fail(f"bad ELF: {what} name offset {offset} lies past the dynamic string table")
        start = self._base + offset
        end = self._buf.find(b"\0", start, self._base + self._size)
        if end < 0:
            raise self._src.fail(f"bad ELF: {what} name is not terminated inside the dynamic string table")
        name = str(self._buf[start:end], "utf-8", "backslashreplace")
        self._cache[offset] = name
        return name


def _u32_array(data: bytes, endian: str) -> array[int]:
    arr = array("I", data)
    if (endian == "<") != (sys.byteorder == "little"):
        arr.byteswap()
    return arr


def count_from_hash(amap: AddressMap, hdr: ElfHeader, vaddr: int) -> int:
    """Number of dynamic symbols from DT_HASH: its nchain field."""
    _nbucket, nchain = struct.unpack(hdr.endian + "II", amap.read(vaddr, 8, "ELF hash table header"))
    return int(nchain)


def count_from_gnu_hash(amap: AddressMap, hdr: ElfHeader, vaddr: int) -> int:
    """Number of dynamic symbols from DT_GNU_HASH: one past the end of the chain of the highest bucket."""
    head = amap.read(vaddr, 16, "GNU hash table header")
    nbuckets, symoffset, bloom_size, _shift = struct.unpack(hdr.endian + "IIII", head)
    word = 8 if hdr.elf_class == 64 else 4
    buckets_at = vaddr + 16 + bloom_size * word
    buckets = _u32_array(amap.read(buckets_at, 4 * nbuckets, "GNU hash buckets"), hdr.endian)
    last = max(buckets, default=0)
    if last == 0:
        return int(symoffset)
    if last < symoffset:
        raise amap.fail("bad ELF: GNU hash bucket points below its symbol offset")
    chain_at = buckets_at + 4 * nbuckets + 4 * (last - symoffset)
    room = min(amap.room(chain_at), 4 * MAX_SYMBOLS) // 4 * 4
    low_byte = 0 if hdr.endian == "<" else 3
    pos = 0
    while pos < room:
        chunk = amap.read(chain_at + pos, min(_CHAIN_CHUNK, room - pos), "GNU hash chain")
        hit = chunk[low_byte::4].translate(_ODD_TO_ONE).find(1)
        if hit >= 0:
            return int(last) + pos // 4 + hit + 1
        pos += len(chunk)
    raise amap.fail("bad ELF: GNU hash chain never terminates")


def count_from_sections(sections: tuple[SectionHeader, ...], symtab: int) -> int | None:
    """Fallback when there is no hash table: the size of the SHT_DYNSYM section at that address."""
    for sec in sections:
        if sec.type == _SHT_DYNSYM and sec.addr == symtab and sec.entsize:
            return sec.size // sec.entsize
    return None


def read_versions(
    amap: AddressMap,
    hdr: ElfHeader,
    strings: StringTable,
    verdef: int | None,
    verdefnum: int | None,
    verneed: int | None,
    verneednum: int | None,
) -> VersionTables:
    """Walk the version definition and need chains.

    Next-links are unsigned and relative, so a chain only moves forward: it cannot loop, and it ends at
    a zero link, at the declared count, at MAX_VERSION_ENTRIES, or in an error at the end of its segment.
    """
    defs: dict[int, str] = {}
    def_names: list[str] = []
    for ndx, flags, name in _walk_verdef(amap, hdr, strings, verdef, verdefnum):
        if flags & _VER_FLG_BASE:
            continue
        defs[ndx] = name
        def_names.append(name)
    needs: dict[int, tuple[str, str]] = {}
    need_list: list[VersionNeed] = []
    for file, versions in _walk_verneed(amap, hdr, strings, verneed, verneednum):
        names = []
        for other, name in versions:
            needs[other] = (name, file)
            names.append(name)
        need_list.append(VersionNeed(file=file, versions=tuple(names)))
    return VersionTables(defs, tuple(def_names), needs, tuple(need_list))


def _chain_limit(amap: AddressMap, num: int | None, what: str) -> int:
    if num is not None and num > MAX_VERSION_ENTRIES:
        raise amap.fail(f"bad ELF: {num} {what} entries")
    return MAX_VERSION_ENTRIES if num is None else num


def _walk_verdef(
    amap: AddressMap, hdr: ElfHeader, strings: StringTable, start: int | None, num: int | None
) -> list[tuple[int, int, str]]:
    if start is None:
        return []
    out: list[tuple[int, int, str]] = []
    at = start
    for _ in range(_chain_limit(amap, num, "version definition")):
        raw = amap.read(at, 20, "version definition")
        _ver, flags, ndx, cnt, _hash, aux, nxt = struct.unpack(hdr.endian + "HHHHIII", raw)
        name = ""
        if cnt:
            (name_off,) = struct.unpack(hdr.endian + "I", amap.read(at + aux, 4, "version definition name"))
            name = strings.get(name_off, "version definition")
        out.append((ndx & 0x7FFF, flags, name))
        if nxt == 0:
            break
        at += nxt
    else:
        if num is None:
            raise amap.fail("bad ELF: version definition chain never ends")
    return out


def _walk_verneed(
    amap: AddressMap, hdr: ElfHeader, strings: StringTable, start: int | None, num: int | None
) -> list[tuple[str, list[tuple[int, str]]]]:
    if start is None:
        return []
    out: list[tuple[str, list[tuple[int, str]]]] = []
    total = 0
    at = start
    for _ in range(_chain_limit(amap, num, "version need")):
        raw = amap.read(at, 16, "version need")
        _ver, cnt, file_off, aux, nxt = struct.unpack(hdr.endian + "HHIII", raw)
        file = strings.get(file_off, "version need file")
        versions: list[tuple[int, str]] = []
        aux_at = at + aux
        for _i in range(cnt):
            total += 1
            if total > MAX_VERSION_ENTRIES:
                raise amap.fail("bad ELF: too many version need entries")
            raw_aux = amap.read(aux_at, 16, "version need auxiliary entry")
            _hash, _flags, other, name_off, aux_next = struct.unpack(hdr.endian + "IHHII", raw_aux)
            versions.append((other & 0x7FFF, strings.get(name_off, "version need")))
            if aux_next == 0:
                break
            aux_at += aux_next
        out.append((file, versions))
        if nxt == 0:
            break
        at += nxt
    else:
        if num is None:
            raise amap.fail("bad ELF: version need chain never ends")
    return out


def read_symbols(
    amap: AddressMap,
    hdr: ElfHeader,
    strings: StringTable,
    symtab: int,
    count: int,
    syment: int,
    versym: int | None,
    versions: VersionTables,
) -> tuple[tuple[SymbolExport, ...], tuple[SymbolImport, ...], list[int]]:
    """Decode ``count`` dynamic symbols and split them into exports and imports with their versions;
    last, the dynamic symbol index of each import."""
    base = 16 if hdr.elf_class == 32 else 24
    if syment < base:
        raise amap.fail(f"bad ELF: dynamic symbol entry size {syment} is too small")
    if count > MAX_SYMBOLS or count * syment > MAX_TABLE_BYTES:
        raise amap.fail(f"bad ELF: implausible dynamic symbol count {count}")
    data = amap.view(symtab, count * syment, "dynamic symbol table")
    if versym is not None:
        vers = _native(amap.view(versym, 2 * count, "symbol version table"), "H", hdr.endian)
    else:
        vers = memoryview(bytes(2 * count)).cast("H")
    columns = _columns(data, hdr, syment)
    imports, import_indexes = _imports(strings, columns, vers, versions)
    return _exports(strings, columns, vers, versions), imports, import_indexes


@dataclass(frozen=True)
class SymbolColumns:
    """st_name, st_info, st_other and st_shndx of every symbol, one sequence per field."""

    name: Sequence[int]
    info: bytes
    other: bytes
    defined: bytes  # 1 where st_shndx != SHN_UNDEF

    def __len__(self) -> int:
        return len(self.info)


def _native(view: memoryview, code: str, endian: str) -> Sequence[int]:
    """``view`` as unsigned integers, in place when the file's byte order is the host's."""
    if (endian == "<") == (sys.byteorder == "little"):
        native: Sequence[int] = view.cast(code)  # type: ignore[call-overload]
        return native
    swapped = array(code)
    swapped.frombytes(view)
    swapped.byteswap()
    return swapped


def _columns(data: memoryview, hdr: ElfHeader, syment: int) -> SymbolColumns:
    """Slice the four fields out of the table in bulk; odd entry sizes take the slower unpack path."""
    base = 24 if hdr.elf_class == 64 else 16
    if syment == base:
        words = _native(data, "I", hdr.endian)
        at = 4 if hdr.elf_class == 64 else 12  # st_info, st_other, then the two bytes of st_shndx
        shndx_lo, shndx_hi = bytes(data[at + 2 :: base]), bytes(data[at + 3 :: base])
        defined = int.from_bytes(shndx_lo.translate(_NONZERO), "little") | int.from_bytes(
            shndx_hi.translate(_NONZERO), "little"
        )
        return SymbolColumns(
            words[0 :: base // 4],
            bytes(data[at::base]),
            bytes(data[at + 1 :: base]),
            defined.to_bytes(len(shndx_lo), "little"),
        )
    fmt = hdr.endian + ("I8xBBH" if hdr.elf_class == 32 else "IBBH16x") + "x" * (syment - base)
    rows = list(struct.iter_unpack(fmt, data))
    return SymbolColumns(
        [r[0] for r in rows],
        bytes(r[1] for r in rows),
        bytes(r[2] for r in rows),
        bytes(int(r[3] != 0) for r in rows),
    )


def _mask_and(count: int, *masks: bytes) -> bytes:
    """Byte-wise AND of 0/1 masks, done on big integers so it runs at C speed."""
    acc = -1
    for mask in masks:
        acc &= int.from_bytes(mask, "little")
    return acc.to_bytes(count, "little")


def _exports(
    strings: StringTable, cols: SymbolColumns, vers: Sequence[int], versions: VersionTables
) -> tuple[SymbolExport, ...]:
    """Defined, loader-visible symbols; each column is mapped at C speed, never per-symbol Python.

    Fields equal to the dataclass default are not stored on the instance: attribute lookup then finds
    the class-level default, so the objects compare, hash and serialise like ordinarily built ones.
    """
    sel = _mask_and(
        len(cols), cols.info.translate(_EXPORT_INFO), cols.other.translate(_VISIBLE), cols.defined
    )
    names = strings.names(cols.name, sel, "symbol")
    objs = list(map(SymbolExport.__new__, repeat(SymbolExport, len(names))))
    set_field = object.__setattr__
    deque(map(set_field, objs, repeat("name"), names), maxlen=0)
    infos = bytes(compress(cols.info, sel))
    for field, table, differs in (
        ("kind", _KIND_OF_INFO, infos.translate(_KIND_DIFFERS)),
        ("binding", _BINDING_OF_INFO, infos.translate(_BINDING_DIFFERS)),
    ):
        values = map(table.__getitem__, compress(infos, differs))
        deque(map(set_field, compress(objs, differs), repeat(field), values), maxlen=0)
    versioned: list[tuple[str, Iterable[object]]] = []
    if versions.export_names:
        versioned.append(("version", map(versions.export_names.get, compress(vers, sel))))
    if versions.export_hidden:
        versioned.append(("default", map(versions.export_hidden.get, compress(vers, sel), repeat(True))))
    for field, column in versioned:
        values_list = list(column)
        differs_list = list(map(operator.ne, values_list, repeat(_EXPORT_DEFAULTS.get(field, _NO_DEFAULT))))
        deque(
            map(set_field, compress(objs, differs_list), repeat(field), compress(values_list, differs_list)),
            0,
        )
    return tuple(objs)


def _imports(
    strings: StringTable, cols: SymbolColumns, vers: Sequence[int], versions: VersionTables
) -> tuple[tuple[SymbolImport, ...], list[int]]:
    """Undefined non-local symbols, with the version and file .gnu.version_r requires them from, and
    the dynamic symbol index of each."""
    undefined = cols.defined.translate(_FLIP)
    sel = bytearray(_mask_and(len(cols), cols.info.translate(_NON_LOCAL), undefined))
    if sel:
        sel[0] = 0
    indexes = list(compress(range(len(cols)), sel))
    names = strings.names(cols.name, sel, "symbol")
    out: list[SymbolImport] = []
    needs = versions.needs
    for i, name in zip(indexes, names, strict=True):
        need = needs.get(vers[i] & 0x7FFF)
        out.append(
            SymbolImport(
                name=name,
                version=need[0] if need else None,
                version_file=need[1] if need else None,
                weak=cols.info[i] >> 4 == 2,
            )
        )
    return tuple(out), indexes


def relocation_symbols(
    amap: AddressMap, hdr: ElfHeader, vaddr: int, size: int, entsize: int, rela: bool, skip: int
) -> Sequence[int]:
    """The symbol index of each entry of one relocation table, in table order, after its first ``skip``
    (relative) entries."""
    base = (24 if rela else 16) if hdr.elf_class == 64 else (12 if rela else 8)
    entsize = entsize or base
    if entsize < base or size % entsize:
        raise amap.fail(f"bad ELF: relocation entries of {entsize} bytes in a table of {size} bytes")
    if size > MAX_TABLE_BYTES:
        raise amap.fail(f"bad ELF: relocation table of {size} bytes is implausibly large")
    start = min(skip, size // entsize) * entsize
    data = amap.view(vaddr + start, size - start, "relocation table")
    if hdr.elf_class == 64:
        # r_info is the second 8-byte word; its high half is the symbol index
        words = _native(data, "I", hdr.endian)
        high = 3 if hdr.endian == "<" else 2
        return words[high :: entsize // 4]
    info = _native(data, "I", hdr.endian)[1 :: entsize // 4]
    return [i >> 8 for i in info]
