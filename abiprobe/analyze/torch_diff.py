"""What changed between two torch releases, from their bytes: exports, CUDA sonames, C++ string ABI.

Pure: two torch ``WheelFacts`` (wheels, unpacked directories or installed distributions) in, a frozen
``TorchDiff`` out; renderers live in ``abiprobe.report.torch_diff_text``. A removed export whose qualified
name is still exported with other parameters is reported once, as a signature change (the seed case:
``c10::cuda::c10_cuda_check_implementation(int, ...)`` became ``(unsigned int, ...)``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abiprobe.model.cxxnames import abi_tag_kind, demangle, split_signature
from abiprobe.model.facts import ElfFacts, WheelFacts
from abiprobe.model.sonames import cuda_major_of_soname

TORCH_DIFF_SCHEMA_VERSION = 1
# torch's own libraries (not the third-party ones it bundles in torch/lib: libgomp, libgfortran ...)
_TORCH_LIBRARY = re.compile(
    r"^torch/(?:lib/lib(?:c10|torch|shm|caffe2)[^/]*\.so(?:\.\d+)*|_C(?:\.[^/]*)?\.so)$"
)
_FUNCTION_TAIL = re.compile(r"\)(?:\s*(?:const|volatile|&&|&))*$")
_SPECIAL = ("vtable for ", "typeinfo name for ", "typeinfo for ", "VTT for ", "guard variable for ",
            "construction vtable for ", "non-virtual thunk to ", "virtual thunk to ")  # fmt: skip
PUBLIC_PREFIXES = (
    "_ZN3c10",
    "_ZNK3c10",
    "_ZN2at",
    "_ZNK2at",
    "_ZN5torch",
    "_ZNK5torch",
    "aoti_torch_",
    "torch_",
)
_CXX11_MARKERS = ("B5cxx11", "St7__cxx11")
# torch's C++ namespaces as an Itanium mangled name spells them, anywhere in the name (vtables,
# typeinfo and std templates over torch types included), the length not the tail of a longer one
# (``std::__12atomic`` names no torch type)
TORCH_MANGLED = re.compile(r"^_Z.*?(?<![0-9])(?:3c10|2at|5torch|4c10d|6caffe2)")
# std:: names: nested (cv- and ref-qualified members too: ``_ZNKRSt7__cxx1115basic_stringbuf...3strEv``),
# plain, vtables / typeinfo, and operator new / delete
_STD_NAME = re.compile(r"^(?:_ZN[rVK]*[RO]?S[ts]|_ZS[ts]|_ZT[VIS]S[ts]|_Zn[wa]|_Zd[la])")


def libstdcxx_may_provide(name: str) -> bool:
    """A std:: symbol over no torch type (``std::string::replace``): libstdc++ exports it too, so an
    import of it does not depend on which torch exports it."""
    return bool(_STD_NAME.match(name)) and not TORCH_MANGLED.match(name)


def torch_libraries(facts: WheelFacts) -> tuple[ElfFacts, ...]:
    """The objects whose exports make torch's ABI: ``torch/lib/*.so`` and the ``torch/_C`` module."""
    return tuple(e for e in facts.elf if _TORCH_LIBRARY.match(e.path))


def torch_exports(facts: WheelFacts) -> dict[str, str]:
    """Every defined dynamic symbol of torch's libraries -> the file name of the first library exporting it
    (version-definition names, which ld exports as absolute symbols, are not exports an import binds to)."""
    out: dict[str, str] = {}
    for lib in torch_libraries(facts):
        name = posixpath.basename(lib.path)
        defs = frozenset(lib.version_defs)
        for e in lib.exports:
            if e.name not in defs:
                out.setdefault(e.name, name)
    return out


def function_signature(name: str) -> tuple[str, str] | None:
    """(qualified name, parameters) of a mangled *function* name; None for data, guard variables, vtables,
    thunks and local statics (whose demangled form also carries the parameters of an enclosing function)."""
    if not name.startswith("_Z"):
        return None
    text = demangle(name)
    if text.startswith(_SPECIAL) or not _FUNCTION_TAIL.search(text):
        return None
    return split_signature(name)


@dataclass(frozen=True)
class ExportChange:
    """One export removed, added, or (``before`` and ``after`` both set) changed in signature."""

    symbol: str  # mangled; for a signature change, the one that went away
    demangled: str
    namespace: str
    library: str
    replacement: str | None = None  # signature changes: the mangled export that took its place
    replacement_demangled: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "symbol": self.symbol,
            "demangled": self.demangled,
            "namespace": self.namespace,
            "library": self.library,
        }
        if self.replacement is not None:
            out["replacement"] = self.replacement
            out["replacement_demangled"] = self.replacement_demangled
        return out


@dataclass(frozen=True)
class ReleaseSide:
    """What one side of the diff is: its version, CUDA sonames and majors, C++ string ABI, export count."""

    label: str
    version: str
    exports: int
    cuda_sonames: tuple[str, ...]
    cuda_majors: tuple[int, ...]
    string_abi: str  # "cxx11", "old", "both", "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "version": self.version,
            "exports": self.exports,
            "cuda_sonames": list(self.cuda_sonames),
            "cuda_majors": list(self.cuda_majors),
            "string_abi": self.string_abi,
        }


@dataclass(frozen=True)
class BrokenKernel:
    """A kernel wheel abiprobe knows that imports exports the newer release no longer has."""

    wheel: str  # "sglang-kernel 0.4.6.post1"
    filename: str
    symbols: tuple[str, ...]  # mangled, sorted
    objects: tuple[str, ...]  # paths of its objects importing them

    def to_json(self) -> dict[str, Any]:
        return {
            "wheel": self.wheel,
            "filename": self.filename,
            "symbols": list(self.symbols),
            "demangled": [demangle(s) for s in self.symbols],
            "objects": list(self.objects),
        }


@dataclass(frozen=True)
class TorchDiff:
    """Torch ``old`` against torch ``new``: export changes grouped by namespace, and the headline facts."""

    old: ReleaseSide
    new: ReleaseSide
    removed: tuple[ExportChange, ...]
    added: tuple[ExportChange, ...]
    changed: tuple[ExportChange, ...]
    cuda_sonames_removed: tuple[str, ...]
    cuda_sonames_added: tuple[str, ...]
    kernels: tuple[BrokenKernel, ...] = ()
    kernels_checked: int = 0

    def gone(self) -> frozenset[str]:
        """Mangled names an extension built on ``old`` may import that ``new`` does not export."""
        return frozenset(c.symbol for c in (*self.removed, *self.changed))

    def headline(self) -> str:
        """One line: counts, then CUDA and string-ABI changes."""
        parts = [
            f"{len(self.removed)} removed, {len(self.changed)} signature changed, {len(self.added)} added"
        ]
        if self.old.cuda_majors != self.new.cuda_majors:
            parts.append(f"CUDA {_majors(self.old.cuda_majors)} -> {_majors(self.new.cuda_majors)}")
        if self.old.string_abi != self.new.string_abi:
            parts.append(f"std::string ABI {self.old.string_abi} -> {self.new.string_abi}")
        broken = [k for k in self.kernels if k.symbols]
        if self.kernels_checked:
            parts.append(
                f"{len(broken)} of {self.kernels_checked} known kernel wheels import a removed export"
            )
        return f"torch {self.old.version} -> {self.new.version}: " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": TORCH_DIFF_SCHEMA_VERSION,
            "kind": "abiprobe-torch-diff",
            "headline": self.headline(),
            "old": self.old.to_json(),
            "new": self.new.to_json(),
            "summary": {
                "removed": len(self.removed),
                "added": len(self.added),
                "changed": len(self.changed),
            },
            "namespaces": namespace_counts(self),
            "removed": [c.to_json() for c in self.removed],
            "added": [c.to_json() for c in self.added],
            "changed": [c.to_json() for c in self.changed],
            "cuda_sonames": {
                "removed": list(self.cuda_sonames_removed),
                "added": list(self.cuda_sonames_added),
            },
            "kernels": {
                "checked": self.kernels_checked,
                "broken": [k.to_json() for k in self.kernels if k.symbols],
            },
        }


def _majors(majors: Sequence[int]) -> str:
    return "/".join(str(m) for m in majors) or "none"


def namespace_of(symbol: str) -> str:
    """``c10::cuda`` for ``c10::cuda::c10_cuda_check_implementation(...)``; ``(C)`` for plain C names;
    at most two levels, so a release's thousands of changes fall into a readable handful of groups."""
    if not symbol.startswith("_Z"):
        return "(C)"
    text = demangle(symbol)
    if text == symbol:
        return "(unreadable)"
    for prefix in _SPECIAL:
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    sig = split_signature(text) if _FUNCTION_TAIL.search(text) else None
    head = sig[0] if sig is not None else _before_parameters(text)
    parts = _scope_parts(head)
    return "::".join(parts[:-1][:2]) or "(global)"


def _before_parameters(text: str) -> str:
    """``a::f<int (*)()>(x)::s`` -> ``a::f<int (*)()>``: the name up to its first top-level ``(``."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0:
            return text[:i]
    return text


def _scope_parts(qualified: str) -> list[str]:
    """Split ``a::b<c::d>::f`` at top-level ``::`` only."""
    parts: list[str] = []
    depth, start, i = 0, 0, 0
    while i < len(qualified):
        ch = qualified[i]
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(depth - 1, 0)
        elif depth == 0 and qualified.startswith("::", i):
            parts.append(qualified[start:i])
            start = i + 2
            i += 1
        i += 1
    parts.append(qualified[start:])
    return [p for p in parts if p]


def _public_first(change: ExportChange) -> tuple[int, str]:
    """torch's own C++ and C API before bundled and internal symbols, then alphabetical."""
    public = change.symbol.startswith(PUBLIC_PREFIXES)
    return (0 if public else 1, change.demangled)


def string_abi(names: Iterable[str]) -> str:
    """Which libstdc++ std::string ABI a library's exports commit to: cxx11, old, both or none."""
    cxx11 = old = False
    for name in names:
        if any(m in name for m in _CXX11_MARKERS):
            cxx11 = True
        elif ("Ss" in name or "St12basic_string" in name) and abi_tag_kind(name) == "old":
            old = True
        if cxx11 and old:
            return "both"
    return "cxx11" if cxx11 else ("old" if old else "none")


def release_side(facts: WheelFacts, exports: Mapping[str, str]) -> ReleaseSide:
    sonames = sorted(
        {n for lib in torch_libraries(facts) for n in lib.needed if cuda_major_of_soname(n) is not None}
    )
    majors = sorted({m for n in sonames if (m := cuda_major_of_soname(n)) is not None})
    return ReleaseSide(
        label=facts.filename,
        version=facts.metadata.version,
        exports=len(exports),
        cuda_sonames=tuple(sonames),
        cuda_majors=tuple(majors),
        string_abi=string_abi(exports),
    )


def _change(symbol: str, library: str) -> ExportChange:
    return ExportChange(symbol, demangle(symbol), namespace_of(symbol), library)


def diff_torch(old: WheelFacts, new: WheelFacts, kernels: Sequence[WheelFacts] = ()) -> TorchDiff:
    """Exports removed / added / changed in signature from ``old`` to ``new``, and which ``kernels``
    (wheels built against some torch) import an export ``new`` no longer has."""
    before, after = torch_exports(old), torch_exports(new)
    removed_names = sorted(set(before) - set(after))
    added_names = sorted(set(after) - set(before))
    by_qualified: dict[str, list[str]] = {}
    for name in added_names:
        sig = function_signature(name)
        if sig is not None:
            by_qualified.setdefault(sig[0], []).append(name)
    changed: list[ExportChange] = []
    replaced: set[str] = set()
    removed: list[ExportChange] = []
    for name in removed_names:
        sig = function_signature(name)
        others = [
            o
            for o in (by_qualified.get(sig[0], ()) if sig is not None else ())
            if o not in replaced and demangle(o) != demangle(name)
        ]
        if others:
            other = others[0]
            replaced.add(other)
            base = _change(name, before[name])
            changed.append(
                ExportChange(
                    base.symbol, base.demangled, base.namespace, base.library, other, demangle(other)
                )
            )
        else:
            removed.append(_change(name, before[name]))
    added = [_change(n, after[n]) for n in added_names if n not in replaced]
    old_side, new_side = release_side(old, before), release_side(new, after)
    gone = frozenset(removed_names)
    return TorchDiff(
        old=old_side,
        new=new_side,
        removed=tuple(sorted(removed, key=_public_first)),
        added=tuple(sorted(added, key=_public_first)),
        changed=tuple(sorted(changed, key=_public_first)),
        cuda_sonames_removed=tuple(sorted(set(old_side.cuda_sonames) - set(new_side.cuda_sonames))),
        cuda_sonames_added=tuple(sorted(set(new_side.cuda_sonames) - set(old_side.cuda_sonames))),
        kernels=tuple(broken_kernel(k, gone) for k in kernels),
        kernels_checked=len(kernels),
    )


def broken_kernel(wheel: WheelFacts, gone: frozenset[str]) -> BrokenKernel:
    """Which of ``gone`` the wheel's objects import (empty ``symbols``: none)."""
    symbols: set[str] = set()
    objects: list[str] = []
    for e in wheel.elf:
        hit = {i.name for i in e.imports if i.name in gone and not libstdcxx_may_provide(i.name)}
        if hit:
            symbols |= hit
            objects.append(e.path)
    label = f"{wheel.metadata.name} {wheel.metadata.version}"
    return BrokenKernel(label, wheel.filename, tuple(sorted(symbols)), tuple(objects))


def namespace_counts(diff: TorchDiff) -> list[dict[str, Any]]:
    """Per namespace: how many exports were removed, changed and added; most affected first."""
    counts: dict[str, dict[str, int]] = {}
    for kind, changes in (("removed", diff.removed), ("changed", diff.changed), ("added", diff.added)):
        for c in changes:
            row = counts.setdefault(c.namespace, {"removed": 0, "changed": 0, "added": 0})
            row[kind] += 1
    order = sorted(
        counts, key=lambda ns: (-(counts[ns]["removed"] + counts[ns]["changed"]), -counts[ns]["added"], ns)
    )
    return [{"namespace": ns, **counts[ns]} for ns in order]


__all__ = [
    "TORCH_DIFF_SCHEMA_VERSION",
    "BrokenKernel",
    "ExportChange",
    "ReleaseSide",
    "TorchDiff",
    "broken_kernel",
    "diff_torch",
    "function_signature",
    "libstdcxx_may_provide",
    "namespace_counts",
    "namespace_of",
    "string_abi",
    "torch_exports",
    "torch_libraries",
]
