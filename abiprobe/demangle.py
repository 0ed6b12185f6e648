"""Itanium C++ name demangling, signature splitting and std::string ABI detection.

Demangler: libstdc++'s own ``__cxa_demangle`` called through ctypes. It is the GCC toolchain's demangler,
maintained with the compiler whose mangling we read, present wherever a C++ runtime is installed, and
needs no new dependency; its ``malloc``-ed result is released with libc ``free``. Without the library
names come back unchanged.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal

AbiTagKind = Literal["cxx11", "old"]


class _Demangler:
    """Lazily bound ``__cxa_demangle`` and ``free``; ``available`` is False where libstdc++ is missing."""

    def __init__(self) -> None:
        self._demangle: Any = None
        self._free: Any = None
        self.available = False
        for name in (ctypes.util.find_library("stdc++"), "libstdc++.so.6"):
            if not name:
                continue
            try:
                lib = ctypes.CDLL(name)
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                # getattr: a literal ``lib.__cxa_demangle`` in a class body would be name-mangled.
                demangle = getattr(lib, "__cxa_demangle")
                free = libc.free
            except (OSError, AttributeError):
                continue
            demangle.restype = ctypes.c_void_p
            demangle.argtypes = [
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.c_void_p,
                ctypes.POINTER(ctypes.c_int),
            ]
            free.restype = None
            free.argtypes = [ctypes.c_void_p]
            self._demangle, self._free, self.available = demangle, free, True
            return

    def __call__(self, name: str) -> str | None:
        if self._demangle is None or self._free is None:
            return None
        try:
            raw = name.encode("ascii")
        except UnicodeEncodeError:
            return None
        status = ctypes.c_int(0)
        pointer = self._demangle(raw, None, None, ctypes.byref(status))
        if not pointer:
            return None
        try:
            result = ctypes.string_at(pointer)
        finally:
            self._free(pointer)
        return result.decode("utf-8", "replace") if status.value == 0 else None


_DEMANGLER = _Demangler()


def demangler_available() -> bool:
    return _DEMANGLER.available


def _mangled(name: str) -> bool:
    return name.startswith("_Z") and len(name) > 2


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    """The demangled form of an Itanium-mangled name; the input unchanged when it is not one or fails."""
    if not _mangled(name):
        return name
    base, sep, version = name.partition("@")
    result = _DEMANGLER(base)
    if result is None:
        return name
    return f"{result}{sep}{version}" if sep else result


def demangle_many(names: Iterable[str]) -> dict[str, str]:
    """``{name: demangle(name)}`` for many names at once (one ctypes call per distinct mangled name)."""
    return {name: demangle(name) for name in names}


# A C++ name a line of text shows demangled: ``{demangle:_ZN3c105ErrorC2Ev}`` (see :func:`cxx`).
_MARKED = re.compile(r"\{demangle:([^{}\s]+)\}")


def cxx(name: str) -> str:
    """``name`` marked in a line of text to be shown demangled (:func:`render_text`); a C name as it is."""
    return f"{{demangle:{name}}}" if _mangled(name) else name


def render_text(text: str) -> str:
    """``text`` with each name marked by :func:`cxx` demangled, for display.

    Stored results keep the marked mangled names, which are the same on every host; the demangled form
    depends on the local libstdc++ and is produced only here, when a line is shown. Unmarked names (a
    loader's own message) are left as they are."""
    if "{demangle:" not in text:
        return text
    return _MARKED.sub(lambda m: demangle(m.group(1)), text)


_OPERATOR = re.compile(r"(?:^|(?<=[\s:]))operator(?![A-Za-z0-9_])")
_CLONE_SUFFIX = re.compile(r"(?:\s*\[clone [^\]]*\])+$")
_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}


def _params_open(text: str, close: int) -> int | None:
    """Index of the '(' matching the ')' at ``close``, scanning backwards over balanced parentheses."""
    depth = 0
    for i in range(close, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                return i
    return None


def _strip_return_type(head: str) -> str:
    """Drop a leading return type (``void ns::f<int>`` -> ``ns::f<int>``), keeping operator names whole."""
    stop = len(head)
    operator = None
    for match in _OPERATOR.finditer(head):
        operator = match.start()
    if operator is not None:
        stop = operator
    depth = 0
    cut = 0
    for i, char in enumerate(head[:stop]):
        if char in "(<[{":
            depth += 1
        elif char in ")>]}":
            depth = max(depth - 1, 0)
        elif char == " " and depth == 0:
            cut = i + 1
    return head[cut:]


def split_signature(name: str) -> tuple[str, str] | None:
    """``(qualified function name, parameter list)`` of a mangled or demangled function name.

    ``_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib`` gives
    ``("c10::cuda::c10_cuda_check_implementation", "int, char const*, char const*, int, bool")``.
    None when the name has no parameter list (data symbols, plain C names, demangling failures).
    """
    text = demangle(name) if _mangled(name) else name
    text = _CLONE_SUFFIX.sub("", text.partition("@")[0]).rstrip()
    close = text.rfind(")")
    if close < 0:
        return None
    open_ = _params_open(text, close)
    if open_ is None or open_ == 0:
        return None
    qualified = _strip_return_type(text[:open_].rstrip())
    if not qualified:
        return None
    return qualified, text[open_ + 1 : close]


_CXX11_MANGLED = ("B5cxx11", "St7__cxx11", "NSt7__cxx11")
_OLD_DEMANGLED = re.compile(
    r"std::(?:string|wstring|basic_string<|basic_(?:i|o)?stringstream<|basic_stringbuf<|list<)"
)


def abi_tag_kind(mangled: str) -> AbiTagKind | None:
    """Which libstdc++ std::string ABI a mangled name commits to: ``cxx11``, ``old`` or None (neither).

    New ABI: ``B5cxx11`` tags or ``std::__cxx11::`` types. Old ABI: ``Ss`` / ``St12basic_string`` (and
    the other pre-C++11 string and list types) without ``__cxx11``.
    """
    if not _mangled(mangled):
        return None
    if any(marker in mangled for marker in _CXX11_MANGLED):
        return "cxx11"
    text = demangle(mangled)
    if text == mangled.partition("@")[0] or text == mangled:
        return "old" if ("Ss" in mangled or "St12basic_string" in mangled) else None
    if "std::__cxx11::" in text or "[abi:cxx11]" in text:
        return "cxx11"
    return "old" if _OLD_DEMANGLED.search(text) else None


__all__ = [
    "AbiTagKind",
    "abi_tag_kind",
    "cxx",
    "demangle",
    "demangle_many",
    "demangler_available",
    "render_text",
    "split_signature",
]
