"""Mangled C++ names to test the demangler on, and libstdc++'s own demangler as the oracle.

Two corpora: the defined and undefined dynamic symbols of the real wheels whose facts are committed under
``wheel_index_cache/`` (torch, sglang-kernel, the nvidia runtime wheels), read with abiprobe's own cache
code; and the symbols of a shared object g++ builds here from :data:`FIXTURE_SOURCE`, which uses the
constructs real extension code mangles (templates, packs, lambdas, std::string, operators, thunks,
guard variables, TLS, function pointers, arrays, pointers to members, ref-qualifiers, abi tags).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable, Iterable
from pathlib import Path

from elftools.elf.elffile import ELFFile

from abiprobe.store.cache import Cache

from .cbuild import build_shared

REPO = Path(__file__).resolve().parents[2]
CACHE_ROOT = REPO / "wheel_index_cache"


def libstdcxx_demangler() -> Callable[[str], str | None] | None:
    """``__cxa_demangle`` of this host's libstdc++ (None where it is not loadable): the oracle."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    demangle = getattr(lib, "__cxa_demangle")
    demangle.restype = ctypes.c_void_p
    demangle.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    free = libc.free
    free.restype = None
    free.argtypes = [ctypes.c_void_p]

    def oracle(name: str) -> str | None:
        status = ctypes.c_int(0)
        pointer = demangle(name.encode("ascii"), None, None, ctypes.byref(status))
        if not pointer:
            return None
        try:
            return ctypes.string_at(pointer).decode("utf-8", "replace") if status.value == 0 else None
        finally:
            free(pointer)

    return oracle


def cached_wheel_symbols(
    root: Path = CACHE_ROOT, wanted: Callable[[str], bool] = lambda filename: True
) -> dict[str, set[str]]:
    """``{wheel filename: its mangled dynamic symbol names}`` for the stored wheels with ELF objects whose
    filename is ``wanted`` (decoding a torch wheel's symbol tables takes a second or more)."""
    cache = Cache(root, readonly=True)
    out: dict[str, set[str]] = {}
    for path in sorted(root.glob("facts/*/*.facts.gz")):
        sha = path.name.split(".")[0]
        summary = cache.load_summary(sha, allow_partial=True, allow_unverified=True)
        if summary is None or not summary.needed:  # no ELF object (a pure-Python wheel): nothing to read
            continue
        if not wanted(summary.filename):
            continue
        facts = cache.load_facts(sha, allow_partial=True, allow_unverified=True)
        assert facts is not None, f"stored facts {path} do not decode"
        names = {s.name for e in facts.elf for s in (*e.exports, *e.imports) if s.name.startswith("_Z")}
        out[facts.filename] = names
    return out


def elf_symbol_names(path: Path) -> set[str]:
    """Every named .dynsym symbol of an ELF object, defined or undefined."""
    with path.open("rb") as f:
        dynsym = ELFFile(f).get_section_by_name(".dynsym")
        assert dynsym is not None
        return {s.name for s in dynsym.iter_symbols() if s.name}


def mangled(names: Iterable[str]) -> list[str]:
    return sorted(n for n in names if n.startswith("_Z"))


FIXTURE_SOURCE = r"""
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace demo {
struct Base { virtual ~Base(); virtual int f(int) const; int x = 0; };
struct Other { virtual ~Other(); virtual void g(); };
struct Both : Base, Other { ~Both() override; int f(int) const override; void g() override; };
Base::~Base() {}
int Base::f(int a) const { return a; }
Other::~Other() {}
void Other::g() {}
Both::~Both() {}
int Both::f(int a) const { return a + 1; }
void Both::g() {}
struct VBase { virtual ~VBase(); int v = 0; };
VBase::~VBase() {}
struct Diamond : virtual VBase { ~Diamond() override; };
Diamond::~Diamond() {}

template <typename T, int N> struct Box {
  T items[N];
  T& at(int i) { return items[i]; }
  const T& at(int i) const { return items[i]; }
  template <typename U> U as() const { return static_cast<U>(items[0]); }
  operator bool() const { return N > 0; }
  Box& operator+=(const Box&) { return *this; }
  bool operator<(const Box&) const { return false; }
  T operator()(T a, T b) const { return a + b; }
  void refq() & {}
  void refq() && {}
};
template struct Box<int, 3>;
template struct Box<double, 1>;
template struct Box<std::string, 2>;
template long Box<int, 3>::as<long>() const;
template float Box<double, 1>::as<float>() const;

std::string name_of(const std::string& s) { return s + "!"; }
std::vector<std::string> split(const std::string& s, char c) { return {s, std::string(1, c)}; }
std::map<std::string, std::vector<int>> index(std::map<std::string, std::vector<int>> m) { return m; }
int apply(int (*fn)(int, double), int (&arr)[4], void (Base::*pm)(), int Base::*field) {
  return fn(arr[0], 1.0) + (pm != nullptr) + (field != nullptr);
}
void takes_fn(std::function<void(int, std::string&&)> f) { f(1, std::string()); }
void arrays(int (*p)[3], const char* const* q, volatile unsigned long long* r) { (void)p; (void)q; (void)r; }
void rvalue(std::unique_ptr<Base>&& p, std::shared_ptr<const Both> q) { (void)p; (void)q; }
void ellipsis(const char*, ...) {}
void wide(wchar_t, char16_t, char32_t, __int128, unsigned __int128, long double, signed char) {}
using Callback = void (*)(void*, std::size_t) noexcept;
void noexcept_fn(Callback cb) { cb(nullptr, 0); }

template <typename... Ts> void pack(Ts&&... ts) { (void)sizeof...(ts); }
template void pack<>();
template void pack<int, const char*>(int&&, const char*&&);
template void pack<std::string&>(std::string&);
template <typename T> auto deduce(T t) -> decltype(t + 1) { return t + 1; }
template auto deduce<int>(int) -> decltype(1 + 1);
template <bool B, char C, unsigned U, long L> int literal() { return B + C + U + L; }
template int literal<true, 'x', 7u, -3L>();
template <typename T, std::size_t N> std::size_t size_of(const std::array<T, N>&) { return N; }
template std::size_t size_of<float, 8>(const std::array<float, 8>&);
int twice(int a, double b) { return a + (int)b; }
template <auto F> int call_fn() { return F(1, 2.0); }
template int call_fn<&twice>();
template <const std::size_t* P> std::size_t deref() { return *P; }
template std::size_t deref<&std::tuple_size<std::tuple<int>>::value>();

int counter() { static int calls = 0; static std::string cache("x"); return ++calls + (int)cache.size(); }
thread_local std::string tls_name = "t";
std::string& tls() { return tls_name; }
int with_lambda(int x) {
  auto add = [x](int y) { return x + y; };
  auto gen = [](auto a, auto b) { return a * b; };
  std::function<int(int)> f = add;
  return f(1) + gen(2, 3) + gen(1.0, 2.0);
}
template <typename T> int tmpl_lambda(T t) {
  static int hits = 0;
  std::function<T(T)> f = [&](T u) { return u + t; };
  return (int)f(t) + ++hits;
}
template int tmpl_lambda<int>(int);
template int tmpl_lambda<double>(double);
inline int inl(long n) {
  static std::string s("y");
  std::function<long(long, const std::string&)> f = [](long a, const std::string& b) {
    return a + (long)b.size();
  };
  return (int)f(n, s);
}
int use_inl() { return inl(2); }
namespace {
int hidden(int a) { return a; }
}
int (*expose_hidden())(int) { return &hidden; }
inline namespace v2 { int versioned(std::pair<int, long>) { return 2; } }
struct [[gnu::abi_tag("tagged")]] Tagged { int y; };
Tagged make_tagged() { return {1}; }
enum class Color : unsigned char { red = 1 };
template <Color C> int color() { return (int)C; }
template int color<Color::red>();
}  // namespace demo

void* operator new(std::size_t n, demo::Base&) { return ::operator new(n); }
extern "C" int plain_c_function(int a) { return a; }
"""


def fixture_names(out_dir: Path) -> list[str]:
    """The mangled dynamic symbols of the fixture g++ builds from :data:`FIXTURE_SOURCE` (std=c++20)."""
    lib = build_shared(out_dir, "libcxxcorpus.so", FIXTURE_SOURCE, cxx=True, extra=["-std=c++20"])
    return mangled(elf_symbol_names(lib))
