"""Demangling, signature splitting and std::string ABI detection over real g++ symbols, and the pure
demangler checked against libstdc++'s ``__cxa_demangle`` on real wheels' symbols, character for character.

Differential corpus: the mangled dynamic symbols of every wheel whose facts are committed under
``wheel_index_cache/`` (all of them from the small wheels, a fixed sample of 2,500 from one torch and one
sglang-kernel release, whose symbol tables hold ~100,000 names; ``ABIPROBE_CXXNAMES_FULL=1`` compares
every name of every stored wheel),
the symbols of a g++-built fixture, and damaged copies of real names (a demangler must refuse what it
cannot read, never guess).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from support.cbuild import build_shared
from support.cxxcorpus import cached_wheel_symbols, fixture_names, libstdcxx_demangler
from support.tools import missing

from abiprobe.model.cxxnames import (
    abi_tag_kind,
    cxx,
    demangle,
    demangle_many,
    render_text,
    split_signature,
)

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


def test_demangle_many_maps_thousands_of_names() -> None:
    names = [f"_ZN2ns{len(str(i)) + 1}f{i}Ei" for i in range(5000)]
    result = demangle_many(names)
    assert (len(result), result[names[7]], result[names[4321]]) == (5000, "ns::f7(int)", "ns::f4321(int)")


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


# The differential test: our output equals libstdc++'s wherever we answer.

Oracle = Callable[[str], "str | None"]
SAMPLE = 2500
BIG = ("torch-", "sglang_kernel-")


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    found = libstdcxx_demangler()
    if found is None:
        missing("libstdc++ (__cxa_demangle), the oracle", "install libstdc++6")
    assert found is not None
    return found


def _one_release_of_the_big_ones(filename: str) -> bool:
    """Every small wheel; of torch and sglang-kernel (whose releases share most names) one release each."""
    full = os.environ.get("ABIPROBE_CXXNAMES_FULL") == "1"
    return (
        full
        or not filename.startswith(BIG)
        or filename.startswith(("torch-2.15.0-", "sglang_kernel-0.4.10-"))
    )


@pytest.fixture(scope="module")
def wheel_names() -> list[str]:
    by_wheel = cached_wheel_symbols(wanted=_one_release_of_the_big_ones)
    assert {w.split("-")[0] for w in by_wheel} >= {"torch", "sglang_kernel"}
    small = {n for wheel, names in by_wheel.items() if not wheel.startswith(BIG) for n in names}
    big = sorted({n for wheel, names in by_wheel.items() if wheel.startswith(BIG) for n in names} - small)
    if os.environ.get("ABIPROBE_CXXNAMES_FULL") != "1":
        big = random.Random(15).sample(big, min(SAMPLE, len(big)))
    return sorted(small | set(big))


def compare(names: list[str], oracle: Oracle) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    """(where we answer and differ from libstdc++, names libstdc++ reads and we leave unchanged)."""
    wrong: list[tuple[str, str, str | None]] = []
    unread: list[str] = []
    for name in names:
        ours = demangle(name)
        theirs = oracle(name.partition("@")[0])
        if ours == name:
            if theirs is not None:
                unread.append(name)
        elif theirs is None or ours != theirs + name[len(name.partition("@")[0]) :]:
            wrong.append((name, ours, theirs))
    return wrong, unread


def test_equals_libstdcxx_on_the_symbols_of_the_stored_wheels(wheel_names: list[str], oracle: Oracle) -> None:
    # GIVEN the C++ symbols the stored torch, sglang-kernel and nvidia wheels define and import
    assert len(wheel_names) > 3000
    # WHEN each is demangled by us and by libstdc++
    wrong, unread = compare(wheel_names, oracle)
    # THEN no answer of ours differs from libstdc++'s, and we read all but a sliver of what it reads
    assert wrong == []
    read_by_them = sum(1 for n in wheel_names if oracle(n.partition("@")[0]) is not None)
    assert len(unread) <= read_by_them * 0.001, unread[:10]


def test_equals_libstdcxx_on_a_g_plus_plus_build(tmp_path: Path, oracle: Oracle) -> None:
    # GIVEN a shared object g++ builds from templates, packs, lambdas, operators, thunks and TLS
    names = fixture_names(tmp_path)
    assert len(names) > 100
    # THEN we read every one of its symbols exactly as libstdc++ does
    assert compare(names, oracle) == ([], [])


def test_damaged_names_are_refused_or_read_as_libstdcxx_reads_them(
    wheel_names: list[str], oracle: Oracle
) -> None:
    # GIVEN real names with characters replaced, dropped or inserted
    rng = random.Random(7)
    alphabet = "0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz."
    pool = [n for n in wheel_names if len(n) < 300]
    damaged = set()
    for _ in range(3000):
        chars = list(rng.choice(pool))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(2, len(chars))
            roll = rng.random()
            if roll < 0.4:
                chars[at] = rng.choice(alphabet)
            elif roll < 0.7:
                del chars[at]
            else:
                chars.insert(at, rng.choice(alphabet))
        damaged.add("".join(chars))
    # THEN none makes us fail or answer differently from libstdc++ (most are refused by both)
    wrong, _unread = compare(sorted(damaged), oracle)
    assert wrong == []


@pytest.mark.parametrize("name", ["_Z1fv.", "_Z1fIiEvv.cold", "_ZN1AIiE1fEv.isra.0.cold"])
def test_clone_suffixes(name: str, oracle: Oracle) -> None:
    assert demangle(name) == (oracle(name) or name)


# Constructs written by hand, one per grammar rule (the corpora above may lack some): libstdc++ decides.
CRAFTED = """
_Z1fv.cold _Z1fv.isra.0.cold _ZN1A1fEv.constprop.0.isra.0 _Z3foo.cold _Z1fIaLa5EEvv _Z1fIcLc97EEvv
_Z1fIfLf3f800000EEvv _Z1fIdLd0EEvv _Z1fInLn5EEvv _Z1fIsLs5EEvv _Z1fILb1EEvv _Z1fILb2EEvv _Z1fILin5EEvv
_Z1fILjn5EEvv _Z1fIgLg5EEvv _Z1fIDhLDh5EEvv _Z1fILi1EEvv _Z1fILm1EEvv _Z1fILx1EEvv _Z1fILy1EEvv
_Z1fILl1EEvv _Z1fI1ALS0_3EEvv _ZTC1A0_1B _Z1fPVKi _Z1fPrVKi _Z1fIiEPFivEv _Z1fIJEEvDpT_ _Z1fIJicEEvDpT_
_Z1fIJiEiEvDpT_T0_ _ZN1AcviEv _Z1fA3_i _Z1fPA3_i _Z1fRA3_KPi _Z1fM1AFvvE _Z1fM1AKFvvE _Z1fM1Ai
_ZNKR1A1fEv _ZNKO1A1fEv _Z1fFvvRE _ZZ4mainENKUlvE_clEv _ZZ4mainENKUlT_E_clIiEEDaS_ _ZGVZ4mainE1x
_ZTv0_n24_N1AD1Ev _ZThn8_N1AD0Ev _ZTch0_h16_N1A1fEv _ZNSsC1Ev _ZNSsD1Ev _ZNKSs4sizeEv _Z1fSs _Z1fSaIcE
_ZNSs4_Rep10_M_disposeERKSaIcE _ZNSo9_M_insertIdEERSoT_ _ZNSaIcEC1Ev _ZNSdD0Ev _ZNSi3getEv
_ZSt4endlIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_ _ZNSt6vectorIiSaIiEE9push_backERKi
_Z1fIiEvRT_ _Z1fIRiEvOT_ _Z1fIOiEvRT_ _Z1fIOiEvOT_ _Z1fIPFvvEEvRKT_ _Z1fDv4_f _Z1fU8__vectorf
_ZN1AB5cxx11C1Ev _Z1fB5cxx11v _ZN12_GLOBAL__N_11fEv _ZZ1fvE1x_0 _ZZ1fvE1x__12_ _ZZ1fvEN1S1gEv
_ZZ1fvENKUlvE0_clEv _ZZ1fvEs _ZZ1fvEd_1x _ZN1A1BUt_E _ZN1AUt0_C1Ev _ZN1AUt_1fES0_ _Z1fN1AUlvE_ES0_
_ZN3FooltERKS_ _ZN3FoolsEi _ZN1AaSERKS_ _ZN1AnwEm _ZN1AdaEPv _ZN1AcvPFvvEEv _ZNK1AcvbEv _ZdlPvm _Znwm
_ZN1AIiEcvT_IcEEv _ZSt4cout _ZTW1x _ZTH1x _ZTSi _ZTIPKc _ZTVN10__cxxabiv117__class_type_infoE _ZTTN1AE
_ZN1AIiEC2ERKS0_ _ZN1AIiE1fIcEET_S2_ _ZN1AIXadL_Z1gvEEE1fEv _Z1fPFPFivEvE _Z1fDn _Z1fDa _Z1fPDs _ZL3foov
_Z1fIiEDTcl1gfp_EET_ _Z1fIiEDTstT_ET_ _Z1fIiEDTplfp_fp_ET_ _Z1fIiEDTgtfp_fp_ET_ _Z1fIiEDTdtfp_3getET_
_Z1fIiEDTptfp_3getIiEET_ _Z1fIJiEEDTcl1gspfp_EEDpT_ _Z1fIiEDTnxcl1gEEv _Z1fPKFvvE _Z1fCd _Z1fGd
_Z1fIiEDTcl1gfp_Li1EEET_ _Z1fIiEDTclL_Z1gvEEET_ _Z1fIiEDTcl1gIT_EEEv _Z1fIiEDTszfp_ET_ _Z1fIiEvPAstT__i
_Z1fIiEDTcldtfp_3getEET_ _Z1fIiEDTclL_ZN1A1gEvEEET_ _Z1fIiEDTcl1gclL_Z1hvEEEET_
_ZGTtNKSt9exception4whatEv _ZGAN1A1fEv _ZN1A1fEDnEv _Z1fIiEvT_S_ _Z1fIiEvPT_S0_ _Z1fv@@V1 _ZN1aC1Ev@V2
""".split()  # noqa: SIM905 (a list of names reads best as text)


# What we leave unchanged though libstdc++ reads it (none occurs in the stored wheels' symbols): vector
# types and a conversion to a template template parameter.
NOT_READ = {"_Z1fDv4_f", "_ZN1AIiEcvT_IcEEv"}


@pytest.mark.parametrize("name", CRAFTED)
def test_a_crafted_construct_reads_as_libstdcxx_reads_it(name: str, oracle: Oracle) -> None:
    wrong, unread = compare([name], oracle)
    assert wrong == []
    assert unread == ([name] if name in NOT_READ else [])
