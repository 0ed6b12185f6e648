"""The torch releases a kernel wheel's bytes allow, against the torch requirement it declares.

Per extension linking torch: its ABI kind (``stable``: every torch import is a function of torch's stable
C shim, ``aoti_torch_*`` / ``torch_*``; ``unstable``: it imports torch's C++ symbols; ``none``), then
- unstable: the exact set of known torch releases whose libraries export everything it imports;
- stable: a floor, the newest first release among the shim functions it imports (torch's own
  ``shim_function_versions.txt``, shipped as ``data/torch_stable_shim.json``), checked against the
  known releases' bytes.
A wheel's verdict compares that range with its Requires-Dist on torch: ``agrees``, ``too loose``
(declares less than the bytes need) or ``too tight`` (pins what the stable ABI lets float). Pure.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from abiprobe.analyze.torch_build import (
    SHIM_NAME,
    BuildTorch,
    build_torch,
    recorded_build_torch,
    torch_linked,
)
from abiprobe.analyze.torch_diff import TORCH_MANGLED, libstdcxx_may_provide, torch_exports
from abiprobe.model.facts import ElfFacts, WheelFacts
from abiprobe.model.requirements import parse_requirement
from abiprobe.model.verdict import Status, Verdict

AbiKind = Literal["stable", "unstable", "none"]
RangeVerdict = Literal["agrees", "too loose", "too tight", "unknown"]
SHIM_TABLE = Path(__file__).resolve().parent.parent / "data" / "torch_stable_shim.json"
_UPPER_OPERATORS = frozenset({"==", "===", "~=", "<", "<="})


@dataclass(frozen=True)
class TorchRelease:
    """One known torch release: its version and the exports of its own libraries."""

    version: str
    label: str
    exports: frozenset[str] = field(repr=False)

    @property
    def public(self) -> Version:
        return Version(Version(self.version).public)


_RELEASES: dict[tuple[str, str], TorchRelease] = {}


def torch_release(facts: WheelFacts) -> TorchRelease:
    """A torch wheel's facts as a release (memoised by sha256: a real torch's export set costs ~1 s)."""
    key = (facts.sha256, facts.filename)
    found = _RELEASES.get(key) if facts.sha256 else None
    if found is None:
        found = TorchRelease(facts.metadata.version, facts.filename, frozenset(torch_exports(facts)))
        if facts.sha256:
            if len(_RELEASES) > 32:
                _RELEASES.clear()
            _RELEASES[key] = found
    return found


def releases_of(torches: Iterable[WheelFacts]) -> tuple[TorchRelease, ...]:
    """One release per public version (the first wheel seen of each), oldest first."""
    seen: dict[Version, TorchRelease] = {}
    for facts in torches:
        if canonicalize_name(facts.metadata.name) != "torch":
            continue
        try:
            release = torch_release(facts)
            seen.setdefault(release.public, release)
        except InvalidVersion:
            continue
    return tuple(seen[v] for v in sorted(seen))


@dataclass(frozen=True)
class ShimTable:
    """First release (``"2.12"``) of each stable-shim function, and where the table was read."""

    functions: dict[str, str]
    source: str
    source_commit: str
    read_through: str
    first_enforced: str

    def first_release(self, name: str) -> str | None:
        return self.functions.get(name)


@functools.cache
def shim_table(path: Path = SHIM_TABLE) -> ShimTable:
    data = json.loads(path.read_text(encoding="utf-8"))
    functions = {str(k): str(v) for k, v in data["functions"].items()}
    for name, version in functions.items():
        Version(version)  # a malformed table is a packaging bug: fail loudly, in the table's test
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            raise ValueError(f"{path}: not a function name: {name!r}")
    return ShimTable(
        functions, str(data["source"]), str(data["source_commit"]), str(data["read_through"]),
        str(data["first_enforced"]),
    )  # fmt: skip


def is_torch_import(name: str, releases: Sequence[TorchRelease]) -> bool:
    """A symbol only torch provides: torch's C++ namespaces, its C shim, or anything a known torch release
    exports (except std:: instantiations and operators libstdc++ provides as well)."""
    if SHIM_NAME.match(name) or TORCH_MANGLED.match(name):
        return True
    if libstdcxx_may_provide(name):
        return False
    return any(name in r.exports for r in releases)


def _vkey(text: str) -> Version:
    return Version(text)


@dataclass(frozen=True)
class ExtensionRange:
    """The torch range one extension's imports allow."""

    path: str
    kind: AbiKind
    imports: int  # torch imports (strong ones: weak imports never stop a load)
    loads_with: tuple[str, ...]  # known releases exporting every torch import
    missing: tuple[tuple[str, str], ...] = ()  # (release, first torch import it lacks)
    floor: str | None = None  # stable: newest first release among its shim functions
    floor_symbol: str | None = None
    floor_from: str = ""  # "table" (torch's versions file), "bytes" (oldest known release exporting it)
    unknown_shims: tuple[str, ...] = ()  # shim functions neither the table nor a known release has

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "imports": self.imports,
            "loads_with": list(self.loads_with),
            "missing": [{"release": r, "symbol": s} for r, s in self.missing],
            "floor": self.floor,
            "floor_symbol": self.floor_symbol,
            "floor_from": self.floor_from or None,
            "unknown_shims": list(self.unknown_shims),
        }


def extension_range(obj: ElfFacts, releases: Sequence[TorchRelease], table: ShimTable) -> ExtensionRange:
    names = sorted({i.name for i in obj.imports if not i.weak and is_torch_import(i.name, releases)})
    if not names:
        return ExtensionRange(obj.path, "none", 0, tuple(r.version for r in releases))
    loads: list[str] = []
    missing: list[tuple[str, str]] = []
    for r in releases:
        lacking = next((n for n in names if n not in r.exports), None)
        if lacking is None:
            loads.append(r.version)
        else:
            missing.append((r.version, lacking))
    if not all(SHIM_NAME.match(n) for n in names):
        return ExtensionRange(obj.path, "unstable", len(names), tuple(loads), tuple(missing))
    floor, symbol, source, unknown = _stable_floor(names, releases, table)
    return ExtensionRange(
        obj.path, "stable", len(names), tuple(loads), tuple(missing), floor, symbol, source, tuple(unknown)
    )


def _stable_floor(
    names: Sequence[str], releases: Sequence[TorchRelease], table: ShimTable
) -> tuple[str | None, str | None, str, list[str]]:
    """(floor, the function setting it, where its first release came from, functions of unknown age)."""
    read_through = _vkey(table.read_through)
    best: tuple[Version, str, str] | None = None
    unknown: list[str] = []
    for name in names:
        first = table.first_release(name)
        source = "table"
        if first is None:
            exporting = [r for r in releases if name in r.exports]
            older = [r for r in exporting if r.public <= read_through]
            if older or (not exporting and any(r.public <= read_through for r in releases)):
                first = table.first_enforced  # the table's own rule: absent means before 2.10
            elif exporting:
                first, source = f"{exporting[0].public.major}.{exporting[0].public.minor}", "bytes"
            else:
                unknown.append(name)
                continue
        key = _vkey(first)
        if best is None or key > best[0]:
            best = (key, name, source)
    if best is None:
        return (None, None, "", unknown)
    floor = f"{best[0].major}.{best[0].minor}"
    if floor == table.first_enforced and best[2] == "table" and table.first_release(best[1]) is None:
        return (floor, None, "table", unknown)
    return (floor, best[1], best[2], unknown)


def declared_torch(wheel: WheelFacts) -> SpecifierSet | None:
    """The wheel's Requires-Dist on torch (outside extras), all specifiers together; None when it has none."""
    found: list[str] = []
    for text in wheel.metadata.requires_dist:
        req = parse_requirement(text)
        if req is None or canonicalize_name(req.name) != "torch":
            continue
        if req.marker is not None and "extra" in str(req.marker):
            continue
        found.append(str(req.specifier))
    if not found:
        return None
    return SpecifierSet(",".join(s for s in found if s))


@dataclass(frozen=True)
class WheelTorchRange:
    """A kernel wheel's torch range from its bytes, its declared torch requirement, and the verdict."""

    wheel: str
    kind: AbiKind
    extensions: tuple[ExtensionRange, ...]
    releases: tuple[str, ...]  # the known releases checked
    declared: str | None  # the specifier text ("" for a bare ``torch``), None when torch is not required
    verdict: RangeVerdict
    reason: str
    built_with: BuildTorch | None = None  # unstable: the torch minor it was built against, when known

    @property
    def loads_with(self) -> tuple[str, ...]:
        sets = [set(e.loads_with) for e in self.extensions if e.kind != "none"]
        common = set.intersection(*sets) if sets else set(self.releases)
        return tuple(v for v in self.releases if v in common)

    @property
    def floor(self) -> str | None:
        floors = [e.floor for e in self.extensions if e.kind == "stable" and e.floor]
        return max(floors, key=_vkey) if floors else None

    def range_text(self) -> str:
        """``torch >= 2.12 (stable ABI)``, ``torch 2.13.0 only (of 2.12.0, 2.13.0 known)`` ..."""
        if self.kind == "none":
            return "no torch symbols imported"
        known = (
            f"of {len(self.releases)} known" if len(self.releases) > 3 else f"of {', '.join(self.releases)}"
        )
        loads = self.loads_with
        exact = f"torch {', '.join(loads)} ({known})" if loads else f"no known torch release ({known})"
        if not self.releases:
            exact = "not known: no torch release to compare its imports with"
        if self.kind == "stable":
            floor = self.floor
            return f"torch >= {floor} (stable ABI floor); bytes load with {exact}" if floor else exact
        return exact

    def to_json(self) -> dict[str, Any]:
        return {
            "wheel": self.wheel,
            "kind": self.kind,
            "range": self.range_text(),
            "loads_with": list(self.loads_with),
            "floor": self.floor,
            "releases": list(self.releases),
            "declared": self.declared,
            "verdict": self.verdict,
            "reason": self.reason,
            "built_with": self.built_with.to_json() if self.built_with else None,
            "extensions": [e.to_json() for e in self.extensions if e.kind != "none"],
        }

    def as_verdict(self) -> Verdict | None:
        """``requires`` ok for agrees, warn for too loose / too tight; None when there is nothing to say."""
        if self.kind == "none" or self.verdict == "unknown":
            return None
        status: Status = "ok" if self.verdict == "agrees" else "warn"
        text = f"torch range {self.verdict}: {self.reason}"
        return Verdict("requires", status, text, self.wheel, {"torch_range": self.to_json()})


def _stable_verdict(
    floor: str | None, spec: SpecifierSet | None, loads: Sequence[str], releases: Sequence[str]
) -> tuple[RangeVerdict, str]:
    """Stable ABI: the declaration against the floor, and against the known releases' bytes (a known
    release at or above the floor that lacks a shim function it imports is a fact the table cannot undo)."""
    if floor is None:
        return "unknown", "the first release of a shim function it imports is not known"
    need = f"the bytes need torch >= {floor} and the stable ABI lets it float above"
    if spec is None:
        return "too loose", f"declares no torch requirement; {need}"
    lower = [Version(s.version.rstrip(".*")) for s in spec if s.operator in (">=", ">", "==", "===", "~=")]
    if not lower or max(lower) < Version(floor):
        return "too loose", f"declares torch{spec or ' (any)'}; {need}"
    admitted = [v for v in releases if spec.contains(Version(v).public, prereleases=True)]
    lacking = [v for v in admitted if v not in loads]
    if lacking:
        return (
            "too loose",
            f"declares torch{spec}, which admits torch {lacking[0]}; its bytes lack a shim function",
        )
    excluded = [v for v in loads if v not in admitted and Version(v) >= Version(floor)]
    exact = any(s.operator in ("==", "===") and not s.version.endswith(".*") for s in spec)
    if exact or excluded:
        shut = f" (shuts out torch {', '.join(excluded)}, which its bytes load with)" if excluded else ""
        return "too tight", f"pins torch{spec}{shut}; {need}"
    return "agrees", f"declares torch{spec}; the bytes need torch >= {floor}"


def _unstable_verdict(
    spec: SpecifierSet | None, loads: Sequence[str], releases: Sequence[str], built: BuildTorch | None
) -> tuple[RangeVerdict, str]:
    known = f"{len(releases)} known: {', '.join(releases)}"
    exports = (
        f"which only torch {', '.join(loads)} exports (of {len(releases)} known)"
        if loads
        else f"and no known torch release exports all of them ({known})"
        if releases
        else "and no torch release is known to compare them with"
    )
    bound = (
        f"; built against torch {built.minor} ({built.evidence}), it fails with any other torch minor"
        if built
        else "; the torch it was built against cannot be determined, so another minor may abort it"
    )
    if spec is None or not any(s.operator in _UPPER_OPERATORS for s in spec):
        declared = f"torch{spec}" if spec else "no torch requirement"
        return "too loose", f"declares {declared} but imports torch's C++ ABI, {exports}{bound}"
    if not loads:
        return "unknown", f"declares torch{spec}; no known torch release exports all it imports ({known})"
    shown = ", ".join(loads)
    admitted = [v for v in releases if spec.contains(Version(v).public, prereleases=True)]
    outside = [v for v in admitted if v not in loads]
    if outside:
        return (
            "too loose",
            f"declares torch{spec}, which admits torch {outside[0]}; the bytes load only with {shown}{bound}",
        )
    if not admitted:
        return (
            "unknown",
            f"declares torch{spec}; none of the known releases ({', '.join(releases)}) is admitted",
        )
    return "agrees", f"declares torch{spec}; the bytes load with torch {shown}{bound}"


def wheel_torch_range(
    wheel: WheelFacts, releases: Sequence[TorchRelease], table: ShimTable | None = None
) -> WheelTorchRange:
    """The torch range of every extension in ``wheel``, and the wheel's verdict against its declaration."""
    table = table or shim_table()
    label = f"{wheel.metadata.name} {wheel.metadata.version}"
    linked = torch_linked(wheel)  # an object that needs no torch library cannot bind to torch's exports
    exts = tuple(
        extension_range(e, releases, table) for e in wheel.elf if e.elf_type == "DYN" and e.path in linked
    )
    kinds = {e.kind for e in exts}
    kind: AbiKind = "unstable" if "unstable" in kinds else ("stable" if "stable" in kinds else "none")
    spec = declared_torch(wheel)
    declared = None if spec is None else str(spec)
    versions = tuple(r.version for r in releases)
    result = WheelTorchRange(label, kind, exts, versions, declared, "unknown", "")
    if kind == "none":
        return result
    if kind == "stable":
        verdict, reason = _stable_verdict(result.floor, spec, result.loads_with, versions)
    elif not releases and spec is not None and any(s.operator in _UPPER_OPERATORS for s in spec):
        verdict, reason = "unknown", "no torch release is known to check its imports against"
    else:
        built = build_torch(recorded_build_torch(wheel, spec), result.loads_with, versions)
        verdict, reason = _unstable_verdict(spec, result.loads_with, versions, built)
        return WheelTorchRange(label, kind, exts, versions, declared, verdict, reason, built)
    return WheelTorchRange(label, kind, exts, versions, declared, verdict, reason)


def with_set_torch(
    wheels: Sequence[WheelFacts], releases: Sequence[TorchRelease]
) -> tuple[TorchRelease, ...]:
    """``releases`` plus the torch of the set itself, one per public version, oldest first."""
    own = releases_of(wheels)
    merged = {r.public: r for r in (*releases, *own)}
    return tuple(merged[v] for v in sorted(merged))


def torch_range_verdicts(wheels: Sequence[WheelFacts], releases: Sequence[TorchRelease]) -> list[Verdict]:
    """The ``requires`` verdict of the torch range of every wheel but torch itself (``releases``: the
    known torch releases besides the set's own torch)."""
    releases = with_set_torch(wheels, releases)
    out: list[Verdict] = []
    for w in wheels:
        if canonicalize_name(w.metadata.name) == "torch":
            continue
        v = wheel_torch_range(w, releases).as_verdict()
        if v is not None:
            out.append(v)
    return out
