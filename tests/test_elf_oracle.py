"""abiprobe's ELF reader against an independent one: pyelftools, reading the same real objects built by
tests/support/cbuild.py, for what the loader uses (needed sonames, soname, rpath / runpath, defined and
undefined dynamic symbols with their versions, kinds, bindings and weakness, version needs)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile
from support.cbuild import build_shared

from abiprobe.binary.elf import read_elf
from abiprobe.model.facts import ElfFacts

NOSTD = ("-nostdlib",)
BASE_SRC = """
int base_data = 7;
__thread int base_tls;
int base_func(void) { return base_data; }
__attribute__((weak)) int base_weak(void) { return 1; }
__attribute__((visibility("hidden"))) int base_hidden(void) { return 2; }
__attribute__((visibility("protected"))) int base_protected(void) { return 3; }
static int impl(void) { return 4; }
static void *resolve_base_ifunc(void) { return (void *)impl; }
int base_ifunc(void) __attribute__((ifunc("resolve_base_ifunc")));
int old_v1(void) { return 1; }
int new_v2(void) { return 2; }
__asm__(".symver old_v1, pick@BASE_1");
__asm__(".symver new_v2, pick@@BASE_2");
"""
BASE_MAP = "BASE_1 { global: base_*; pick; local: *; };\nBASE_2 { global: pick; } BASE_1;\n"
USER_SRC = """
extern int base_func(void);
extern int pick(void);
extern int base_data;
extern int maybe(void) __attribute__((weak));
int user(void) { return base_func() + pick() + base_data + (maybe ? maybe() : 0); }
"""
LIBC_SRC = """
#include <stdio.h>
#include <string.h>
int greet(char *dst, const char *src, size_t n) { memcpy(dst, src, n); return puts(dst); }
"""
CXX_SRC = """
#include <stdexcept>
#include <string>
namespace shape { std::string describe(int n) {
  if (n < 0) throw std::runtime_error("negative"); return std::to_string(n); } }
"""
KINDS = {"STT_FUNC": "FUNC", "STT_OBJECT": "OBJECT", "STT_TLS": "TLS", "STT_GNU_IFUNC": "IFUNC",
         "STT_LOOS": "IFUNC", "STT_NOTYPE": "NOTYPE"}  # fmt: skip
BINDINGS = {
    "STB_GLOBAL": "GLOBAL",
    "STB_WEAK": "WEAK",
    "STB_GNU_UNIQUE": "GNU_UNIQUE",
    "STB_LOOS": "GNU_UNIQUE",
}


@dataclass(frozen=True)
class Seen:
    """What one reader saw in one object, in comparable form."""

    dynamic: dict[str, list[str]]
    exports: set[tuple[str, str, str]]  # (name@@version, kind, binding)
    imports: set[tuple[str, str | None, bool]]  # (name@version, version file, weak)
    version_needs: list[tuple[str, tuple[str, ...]]]


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("oracle")
    base = build_shared(
        d, "libbase.so", BASE_SRC, soname="libbase.so.1", version_script=BASE_MAP, extra=NOSTD
    )
    return {
        "versioned library": base,
        "user with rpath": build_shared(
            d, "libuser.so", USER_SRC, soname="libuser.so", link=[base], rpath=["$ORIGIN/../lib", "$ORIGIN"],
            extra=NOSTD,
        ),
        "user with runpath": build_shared(
            d, "libuser2.so", USER_SRC, link=[base], runpath=["$ORIGIN/deps"], extra=NOSTD
        ),
        "libc user": build_shared(d, "libgreet.so", LIBC_SRC, soname="libgreet.so"),
        "c++ library": build_shared(d, "libshape.so", CXX_SRC, soname="libshape.so", cxx=True),
    }  # fmt: skip


def _versions(elf: ELFFile) -> tuple[dict[int, str], dict[int, tuple[str, str]]]:
    """Version definitions by index, and version needs by index as (version, file)."""
    defs: dict[int, str] = {}
    needs: dict[int, tuple[str, str]] = {}
    verdef: Any = elf.get_section_by_name(".gnu.version_d")
    for vd, auxes in verdef.iter_versions() if verdef is not None else ():
        defs[int(vd["vd_ndx"])] = next(iter(auxes)).name
    verneed: Any = elf.get_section_by_name(".gnu.version_r")
    for vn, auxes in verneed.iter_versions() if verneed is not None else ():
        for aux in auxes:
            needs[int(aux["vna_other"])] = (aux.name, vn.name)
    return defs, needs


def pyelftools_sees(path: Path) -> Seen:
    with path.open("rb") as handle:
        elf = ELFFile(handle)
        dynamic: dict[str, list[str]] = {"NEEDED": [], "SONAME": [], "RPATH": [], "RUNPATH": []}
        dyn: Any = elf.get_section_by_name(".dynamic")
        for tag in dyn.iter_tags():
            kind = str(tag.entry.d_tag)[3:]
            if kind in dynamic:
                dynamic[kind].append(getattr(tag, kind.lower() if kind != "NEEDED" else "needed"))
        defs, needs = _versions(elf)
        versym: Any = elf.get_section_by_name(".gnu.version")
        exports: set[tuple[str, str, str]] = set()
        imports: set[tuple[str, str | None, bool]] = set()
        dynsym: Any = elf.get_section_by_name(".dynsym")
        for i, sym in enumerate(dynsym.iter_symbols()):
            bind, vis = sym["st_info"]["bind"], sym["st_other"]["visibility"]
            if i == 0 or bind == "STB_LOCAL":
                continue
            raw = versym.get_symbol(i)["ndx"] if versym is not None else 1
            ndx = raw if isinstance(raw, int) else {"VER_NDX_LOCAL": 0, "VER_NDX_GLOBAL": 1}[raw]
            hidden, index = bool(ndx & 0x8000), ndx & 0x7FFF
            if sym["st_shndx"] == "SHN_UNDEF":
                version, file = needs.get(index, (None, None))
                imports.add((sym.name + (f"@{version}" if version else ""), file, bind == "STB_WEAK"))
            elif vis not in ("STV_HIDDEN", "STV_INTERNAL"):
                version = defs.get(index) if index > 1 else None
                name = sym.name + (f"{'@' if hidden else '@@'}{version}" if version else "")
                exports.add((name, KINDS[sym["st_info"]["type"]], BINDINGS[bind]))
        verneed: Any = elf.get_section_by_name(".gnu.version_r")
        version_needs = [
            (vn.name, tuple(a.name for a in auxes))
            for vn, auxes in (verneed.iter_versions() if verneed is not None else ())
        ]
    return Seen(dynamic, exports, imports, version_needs)


def abiprobe_sees(facts: ElfFacts) -> Seen:
    dynamic = {
        "NEEDED": list(facts.needed),
        "SONAME": [facts.soname] if facts.soname else [],
        "RPATH": [":".join(facts.rpath)] if facts.rpath else [],
        "RUNPATH": [":".join(facts.runpath)] if facts.runpath else [],
    }
    return Seen(
        dynamic,
        {(e.display(), e.kind, e.binding) for e in facts.exports},
        {(i.display(), i.version_file, i.weak) for i in facts.imports},
        [(n.file, n.versions) for n in facts.version_needs],
    )


@pytest.mark.parametrize(
    "name", ["versioned library", "user with rpath", "user with runpath", "libc user", "c++ library"]
)
def test_abiprobes_reader_sees_what_pyelftools_sees(objects: dict[str, Path], name: str) -> None:
    # GIVEN a real shared object WHEN abiprobe and pyelftools read it
    path = objects[name]
    ours, theirs = abiprobe_sees(read_elf(path.read_bytes(), path.name)), pyelftools_sees(path)
    # THEN they agree on every loader-relevant fact
    assert ours.dynamic == theirs.dynamic
    assert ours.exports == theirs.exports
    assert ours.imports == theirs.imports
    assert ours.version_needs == theirs.version_needs


def test_the_fixtures_hold_what_the_comparison_is_about(objects: dict[str, Path]) -> None:
    # GIVEN the versioned library and its user, as pyelftools reads them; THEN the comparison covers a
    # hidden and a default version, a weak import, a versioned import, rpath and runpath
    base, user = pyelftools_sees(objects["versioned library"]), pyelftools_sees(objects["user with rpath"])
    names = {e[0] for e in base.exports}
    assert {"pick@BASE_1", "pick@@BASE_2", "base_tls@@BASE_1"} <= names and "base_hidden@@BASE_1" not in names
    assert ("maybe", None, True) in user.imports and ("pick@BASE_2", "libbase.so.1", False) in user.imports
    assert user.dynamic["RPATH"] == ["$ORIGIN/../lib:$ORIGIN"]
    assert pyelftools_sees(objects["user with runpath"]).dynamic["RUNPATH"] == ["$ORIGIN/deps"]
