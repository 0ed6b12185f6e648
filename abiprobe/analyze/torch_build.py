"""The torch an unstable-ABI extension was built against, and the verdict of loading it into another minor.

An extension of torch's C++ ABI (not only its stable C shim) is bound to the torch minor it was built
with: even where every symbol resolves, its static initialisers can abort in another minor
(``std::length_error``, ``std::bad_alloc``). Where the build torch comes from, most direct first: the
build's recorded torch pin (a Requires-Dist on torch that admits one minor only), a torch version in its
local version label (``+cu12torch2.7``, ``+pt28``), and, for the torch range alone, the known releases
whose exports match everything it imports when they are all of one minor. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from abiprobe.analyze.torch_diff import TORCH_MANGLED
from abiprobe.model.facts import ElfFacts, WheelFacts
from abiprobe.model.verdict import Verdict

TORCH_SONAME_PREFIXES = ("libtorch", "libc10")
SHIM_NAME = re.compile(r"^(?:aoti_torch_|torch_)[A-Za-z0-9_]+$")
_LABEL = re.compile(r"(?:torch|pt)(\d+)\.(\d+)|pt(\d)(\d{1,2})(?![0-9])")


def is_torch_soname(name: str) -> bool:
    """``libtorch_cpu.so``, ``libc10_cuda.so`` ...: a library of torch itself."""
    return posixpath.basename(name).startswith(TORCH_SONAME_PREFIXES)


def torch_linked(wheel: WheelFacts) -> frozenset[str]:
    """Paths of the wheel's objects whose DT_NEEDED tree (through the wheel's own libraries, by soname or
    file name) reaches a library of torch: the only ones whose imports can bind to torch's exports."""
    by_name: dict[str, ElfFacts] = {}
    for e in wheel.elf:
        by_name.setdefault(posixpath.basename(e.path), e)
        if e.soname:
            by_name.setdefault(e.soname, e)
    memo: dict[str, bool] = {}

    def reaches(obj: ElfFacts, seen: frozenset[str]) -> bool:
        if obj.path in memo:
            return memo[obj.path]
        found = any(is_torch_soname(n) for n in obj.needed) or any(
            reaches(dep, seen | {obj.path})
            for n in obj.needed
            if (dep := by_name.get(n)) is not None and dep.path not in seen and dep.path != obj.path
        )
        memo[obj.path] = found
        return found

    return frozenset(e.path for e in wheel.elf if reaches(e, frozenset()))


def unstable_imports(obj: ElfFacts) -> tuple[str, ...]:
    """Strong imports of torch's C++ namespaces (not its stable C shim): what binds it to a minor."""
    names = {i.name for i in obj.imports if not i.weak and TORCH_MANGLED.match(i.name)}
    return tuple(sorted(n for n in names if not SHIM_NAME.match(n)))


@dataclass(frozen=True)
class BuildTorch:
    """The torch minor (``"2.9"``) an extension was built against, and what says so."""

    minor: str
    source: str  # "pin", "label" or "exports"
    evidence: str  # words: "its Requires-Dist torch==2.9.1", "its version label +cu128torch2.9" ...

    def to_json(self) -> dict[str, Any]:
        return {"minor": self.minor, "source": self.source, "evidence": self.evidence}


def _minor(v: Version) -> str:
    return f"{v.major}.{v.minor}"


def pinned_minor(spec: SpecifierSet) -> str | None:
    """The one minor a torch specifier admits (``==2.9.1``, ``==2.9.*``, ``~=2.9.0``), else None."""
    minors: set[str] = set()
    for s in spec:
        text = s.version.removesuffix(".*")
        try:
            v = Version(text)
        except InvalidVersion:
            return None
        if s.operator in ("==", "===") or (s.operator == "~=" and len(v.release) >= 3):
            minors.add(_minor(v))
    return minors.pop() if len(minors) == 1 else None


def recorded_build_torch(wheel: WheelFacts, declared: SpecifierSet | None) -> BuildTorch | None:
    """The build torch its metadata records: a pin to one minor, else a torch version in its local label."""
    if declared is not None and (minor := pinned_minor(declared)) is not None:
        return BuildTorch(minor, "pin", f"its Requires-Dist pins torch{declared}")
    try:
        local = Version(wheel.metadata.version).local
    except InvalidVersion:
        return None
    m = _LABEL.search(local or "")
    if m is None:
        return None
    major, minor = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return BuildTorch(f"{int(major)}.{int(minor)}", "label", f"its version label +{local}")


def build_torch(
    recorded: BuildTorch | None, loads_with: Sequence[str], releases: Sequence[str]
) -> BuildTorch | None:
    """The recorded build torch unless the known releases' bytes contradict it (none of that minor
    exports what it imports), else the one minor whose releases alone export everything it imports."""
    minor_of = {v: _minor(Version(v)) for v in releases}
    if recorded is not None:
        of_minor = [v for v in releases if minor_of[v] == recorded.minor]
        if not of_minor or any(v in loads_with for v in of_minor):
            return recorded
    minors = {minor_of[v] for v in loads_with if v in minor_of}
    if len(minors) == 1 and any(minor_of[v] not in minors for v in releases):
        (minor,) = minors
        return BuildTorch(
            minor, "exports", f"its imports are all exported only by torch {', '.join(loads_with)}"
        )
    return None


def build_torch_verdict(
    path: str, obj: ElfFacts, recorded: BuildTorch | None, torch: str, scope: Iterable[str]
) -> Verdict | None:
    """``symbols`` fail for an unstable-ABI unit whose build torch is another minor than the set's
    ``torch``; None when it does not link torch (no torch library in ``scope``, the sonames its load
    needs), uses only the stable shim, or its build torch is not recorded."""
    if recorded is None or not any(is_torch_soname(s) for s in scope):
        return None
    names = unstable_imports(obj)
    try:
        have = _minor(Version(torch))
    except InvalidVersion:
        return None
    if not names or have == recorded.minor:
        return None
    text = (
        f"built against torch {recorded.minor} ({recorded.evidence}) and loaded into torch {torch}: an "
        f"extension of torch's unstable C++ ABI runs only with the torch minor it was built against (its "
        f"static initialisers can abort, std::length_error or std::bad_alloc, even where every symbol "
        f"resolves)"
    )
    evidence = {"torch_build": {**recorded.to_json(), "torch": torch, "imports": len(names)}}
    return Verdict("symbols", "fail", text, path, evidence)
