"""Demangling, signature splitting and std::string ABI detection over real g++ symbols."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from support.cbuild import build_shared

from abiprobe.demangle import (
    abi_tag_kind,
    cxx,
    demangle,
    demangle_many,
    demangler_available,
    render_text,
    split_signature,
)

pytestmark = pytest.mark.skipif(not demangler_available(), reason="libstdc++ is not loadable")

CHECK_INT = "_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib"
CHECK_UINT = "_ZN3c104cuda29c10_cuda_check_implementationEjPKcS2_ib"

SOURCE = """\
#include <string>
namespace demo {
int takes_string(const std::string& s) { return (int)s.size(); }
std::string gives_string() { return "x"; }
int plain(int x) { return x + 1; }
}
"""


def exported_names(path: Path) -> set[str]:
    with path.open("rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        assert dynsym is not None
        return {s.name for s in dynsym.iter_symbols() if s["st_shndx"] != "SHN_UNDEF" and s.name}


@pytest.fixture(scope="module")
def string_abi_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    out = tmp_path_factory.mktemp("cxxabi")
    return {
        flag: exported_names(
            build_shared(
                out, f"libabi{flag}.so", SOURCE, cxx=True, extra=[f"-D_GLIBCXX_USE_CXX11_ABI={flag}"]
            )
        )
        for flag in ("0", "1")
    }


def demo_symbol(names: set[str], part: str) -> str:
    (name,) = [n for n in names if part in n]
    return name


def test_demangles_an_itanium_name() -> None:
    assert (
        demangle(CHECK_INT)
        == "c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool)"
    )


@pytest.mark.parametrize("name", ["cudaMalloc", "_Zbogus", "", "_Z", "memcpy@GLIBC_2.14", "_Z\u00e9"])
def test_leaves_other_names_unchanged(name: str) -> None:
    assert demangle(name) == name


def test_keeps_a_symbol_version_suffix() -> None:
    assert demangle("_ZN3Foo3bazEv@@VER_1") == "Foo::baz()@@VER_1"


def test_demangle_many_maps_each_name() -> None:
    assert demangle_many(["_ZN3FooD1Ev", "free"]) == {"_ZN3FooD1Ev": "Foo::~Foo()", "free": "free"}


def test_demangle_many_is_fast_for_thousands_of_names() -> None:
    names = [f"_ZN2ns{len(str(i)) + 1}f{i}Ei" for i in range(5000)]
    start = time.perf_counter()
    result = demangle_many(names)
    assert (len(result), result[names[7]]) == (5000, "ns::f7(int)")
    assert time.perf_counter() - start < 2.0


def test_overloads_share_the_qualified_name_and_differ_in_parameters() -> None:
    assert (split_signature(CHECK_INT), split_signature(CHECK_UINT)) == (
        ("c10::cuda::c10_cuda_check_implementation", "int, char const*, char const*, int, bool"),
        ("c10::cuda::c10_cuda_check_implementation", "unsigned int, char const*, char const*, int, bool"),
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("_Z3fooIiEvT_", ("foo<int>", "int")),
        ("_ZN3FooclEv", ("Foo::operator()", "")),
        ("_ZN3FoonwEm", ("Foo::operator new", "unsigned long")),
        ("_ZN3FooltERKS_", ("Foo::operator<", "Foo const&")),
        ("_ZZ4mainENKUliE_clEi", ("main::{lambda(int)#1}::operator()", "int")),
        ("_ZN12_GLOBAL__N_13fooEv", ("(anonymous namespace)::foo", "")),
        ("_Z3fooPFviE", ("foo", "void (*)(int)")),
        ("_Z1fv.cold", ("f", "")),
        ("ns::g(int, long) const", ("ns::g", "int, long")),
    ],
)
def test_split_signature(name: str, expected: tuple[str, str]) -> None:
    assert split_signature(name) == expected


@pytest.mark.parametrize("name", ["_ZTV3Foo", "cudaMalloc", "_Zbogus", "(x)"])
def test_names_without_a_parameter_list_do_not_split(name: str) -> None:
    assert split_signature(name) is None


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("_ZNK3foo3barB5cxx11Ev", "cxx11"),
        (
            "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
            "cxx11",
        ),
        ("_ZN3c106detail14torchCheckFailEPKcS2_jRKSs", "old"),
        ("_ZNSs4_Rep10_M_disposeERKSaIcE", "old"),
        ("_Z1fRKSt12basic_stringIwSt11char_traitsIwESaIwEE", "old"),
        (CHECK_INT, None),
        ("cudaMalloc", None),
    ],
)
def test_abi_tag_kind(name: str, kind: str | None) -> None:
    assert abi_tag_kind(name) == kind


def test_string_parameter_shows_the_abi_of_either_build(string_abi_libs: dict[str, set[str]]) -> None:
    # GIVEN g++ builds with _GLIBCXX_USE_CXX11_ABI=0 and =1 of a function taking a std::string
    old, new = string_abi_libs["0"], string_abi_libs["1"]
    # THEN each ABI is recognised from the exported name alone
    assert (
        abi_tag_kind(demo_symbol(old, "takes_string")),
        abi_tag_kind(demo_symbol(new, "takes_string")),
    ) == ("old", "cxx11")


def test_string_return_shows_only_the_new_abi(string_abi_libs: dict[str, set[str]]) -> None:
    # GIVEN the same builds of a function returning std::string: return types are not mangled, so only the
    # new ABI's B5cxx11 tag marks it
    old, new = string_abi_libs["0"], string_abi_libs["1"]
    assert (
        abi_tag_kind(demo_symbol(old, "gives_string")),
        abi_tag_kind(demo_symbol(new, "gives_string")),
    ) == (None, "cxx11")


def test_string_free_function_has_no_string_abi(string_abi_libs: dict[str, set[str]]) -> None:
    assert abi_tag_kind(demo_symbol(string_abi_libs["1"], "plain")) is None


def test_only_marked_names_are_demangled_when_a_line_is_rendered() -> None:
    # GIVEN a stored line with one marked C++ name, a C name and a loader's own (unmarked) mangled name
    line = f"wants {cxx('_ZN3c105ErrorC2Ev')} and {cxx('cuInit')}; ld.so said: undefined symbol: _Z3foov"
    # THEN the stored form names no host-dependent text, and rendering demangles only the marked name
    assert line == "wants {demangle:_ZN3c105ErrorC2Ev} and cuInit; ld.so said: undefined symbol: _Z3foov"
    assert render_text(line) == "wants c10::Error::Error() and cuInit; ld.so said: undefined symbol: _Z3foov"
