"""GPU architectures and the rule deciding whether a set of fatbin entries runs on one of them.

Pure: no I/O. The rules are those of NVIDIA's compatibility table (see the CUDA binaries reference):
plain SASS runs within its major on equal or newer minors, ``a`` SASS on exactly its capability,
``f`` SASS within its family (same major, equal or newer minor), plain PTX JIT-compiles on anything at
least as new, ``a``/``f`` PTX follow the SASS rule but JIT, LTO-IR never loads by itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from abiprobe.errors import UsageError
from abiprobe.model.facts import GpuCode, GpuVariant

ArchStatus = Literal["native", "jit", "none", "no_gpu_code"]

_ARCH_RE = re.compile(
    r"^(?:(?:sm|compute|cc|lto)_?)?(?:(?P<major>\d{1,2})\.(?P<minor>\d)|(?P<joined>\d{2,3}))(?P<variant>[af]?)$"
)


@dataclass(frozen=True, order=True)
class GpuArch:
    """A compute capability (``major.minor``); ``variant`` is kept when parsed from an ``sm_XXa`` name."""

    major: int
    minor: int
    variant: GpuVariant = ""

    @property
    def cc(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def sm(self) -> int:
        return self.major * 10 + self.minor

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}{self.variant}"


def parse_arch(text: str) -> GpuArch:
    """Parse ``sm_120``, ``sm120``, ``12.0``, ``120``, ``sm_90a``, ``compute_120f``, ``12.1`` ..."""
    match = _ARCH_RE.match(text.strip().lower())
    if match is None:
        raise UsageError(
            f"unknown GPU architecture {text!r}: expected e.g. sm_120, sm_90a, compute_120, 12.0 or 120"
        )
    variant: GpuVariant = "a" if match["variant"] == "a" else ("f" if match["variant"] == "f" else "")
    if match["joined"] is not None:
        number = int(match["joined"])
        if number < 30:  # "12" would read as CC 1.2; no such GPU is supported, 12.0 is far likelier meant
            raise UsageError(f"ambiguous GPU architecture {text!r}: write 12.0 or sm_120 (1.2 for CC 1.2)")
        return GpuArch(number // 10, number % 10, variant)
    return GpuArch(int(match["major"]), int(match["minor"]), variant)


# Compute capabilities of NVIDIA GPUs a CUDA 11-13 toolkit builds for (CUDA C++ Programming Guide, "Compute
# Capabilities"; `nvcc --list-gpu-code` of CUDA 12.9 and 13.0, which renamed Thor's 10.1 to 11.0), and
# those with architecture-specific (``a``) and family (``f``, CUDA 12.9+) variants.
KNOWN_CAPABILITIES: tuple[tuple[int, int], ...] = (
    (3, 5), (3, 7), (5, 0), (5, 2), (5, 3), (6, 0), (6, 1), (6, 2), (7, 0), (7, 2), (7, 5),
    (8, 0), (8, 6), (8, 7), (8, 8), (8, 9), (9, 0), (10, 0), (10, 1), (10, 3), (11, 0), (12, 0), (12, 1),
)  # fmt: skip
VARIANTS: dict[str, frozenset[tuple[int, int]]] = {
    "a": frozenset({(9, 0), (10, 0), (10, 1), (10, 3), (11, 0), (12, 0), (12, 1)}),
    "f": frozenset({(10, 0), (10, 1), (10, 3), (11, 0), (12, 0), (12, 1)}),
}


def parse_known_arch(text: str) -> GpuArch:
    """A user's GPU architecture: parsed as ``parse_arch`` does, and one abiprobe knows (else a usage
    error listing the known ones)."""
    arch = parse_arch(text)
    known = ", ".join(f"sm_{m}{n}" for m, n in KNOWN_CAPABILITIES)
    if arch.cc not in KNOWN_CAPABILITIES:
        raise UsageError(f"unknown GPU architecture {text!r}: abiprobe knows {known}")
    if arch.variant and arch.cc not in VARIANTS[arch.variant]:
        with_variant = ", ".join(f"sm_{m}{n}{arch.variant}" for m, n in sorted(VARIANTS[arch.variant]))
        with_variant = with_variant or "none"
        raise UsageError(
            f"no {arch.variant!r} variant of {arch.major}.{arch.minor}: there are {with_variant}"
        )
    return arch


def parse_ptx_isa(text: str) -> tuple[int, int]:
    """``"9.0"`` -> ``(9, 0)``; a PTX ISA version as written in fatbin facts or by a user."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", text)
    if match is None:
        raise UsageError(f"unknown PTX ISA version {text!r}: expected e.g. 9.0")
    return (int(match[1]), int(match[2]))


@dataclass(frozen=True)
class ArchVerdict:
    """Whether an object's GPU code can run on a target: natively, through the driver's JIT, or not at all.

    ``no_gpu_code`` means the object carries no GPU code; analysis treats it as not applicable.
    ``deciding`` holds the entries that make it run (empty for ``none`` and ``no_gpu_code``).
    """

    status: ArchStatus
    deciding: tuple[GpuCode, ...]
    explanation: str


def _variant_allows(sm: int, variant: str, target: GpuArch) -> bool:
    major, minor = divmod(sm, 10)
    if variant == "a":
        return (major, minor) == target.cc
    return major == target.major and minor <= target.minor


def sass_runs_on(entry: GpuCode, target: GpuArch) -> bool:
    """SASS: plain and ``f`` within the same major on equal or newer minors, ``a`` on exactly its CC."""
    return entry.kind == "sass" and _variant_allows(entry.sm, entry.variant, target)


def ptx_compiles_for(entry: GpuCode, target: GpuArch) -> bool:
    """PTX: plain JIT-compiles for every equal or newer CC; ``a``/``f`` PTX follow the SASS rule."""
    if entry.kind != "ptx":
        return False
    if entry.variant == "":
        return entry.sm <= target.sm
    return _variant_allows(entry.sm, entry.variant, target)


def _ptx_isa_ok(entry: GpuCode, max_ptx_isa: tuple[int, int] | None) -> bool:
    if max_ptx_isa is None or entry.ptx_isa is None:
        return True
    try:
        return parse_ptx_isa(entry.ptx_isa) <= max_ptx_isa
    except UsageError:
        return False


_KIND_ORDER = {"sass": 0, "ptx": 1, "ltoir": 2}


def _labels(entries: Sequence[GpuCode]) -> str:
    unique = sorted({(_KIND_ORDER[e.kind], e.sm, e.variant, e.label()) for e in entries})
    return ", ".join(label for *_, label in unique)


def arch_verdict(
    entries: Sequence[GpuCode], target: GpuArch, max_ptx_isa: str | tuple[int, int] | None = None
) -> ArchVerdict:
    """Decide how ``entries`` (all fatbin entries of one object) run on ``target``; native wins over JIT.

    ``max_ptx_isa`` is the newest PTX ISA the target driver accepts (``"9.0"``); None means unknown, and
    then no PTX is refused for its ISA version.
    """
    limit = parse_ptx_isa(max_ptx_isa) if isinstance(max_ptx_isa, str) else max_ptx_isa
    if not entries:
        return ArchVerdict("no_gpu_code", (), "carries no GPU code")
    carried = _labels(entries)
    native = tuple(e for e in entries if sass_runs_on(e, target))
    if native:
        return ArchVerdict(
            "native", native, f"SASS {_labels(native)} runs natively on {target.major}.{target.minor}"
        )
    jit_candidates = [e for e in entries if ptx_compiles_for(e, target)]
    jit = tuple(e for e in jit_candidates if _ptx_isa_ok(e, limit))
    if jit:
        return ArchVerdict(
            "jit",
            jit,
            f"no SASS for {target.major}.{target.minor} (carries {carried}); "
            f"the driver JIT-compiles PTX {_labels(jit)}",
        )
    reason = f"nothing runs on {target.major}.{target.minor}: carries {carried}"
    if jit_candidates and limit is not None:
        isas = sorted({e.ptx_isa for e in jit_candidates if e.ptx_isa})
        reason += f"; its PTX (ISA {', '.join(isas)}) is newer than the driver's ISA {limit[0]}.{limit[1]}"
    elif all(e.kind == "ltoir" for e in entries):
        reason += "; LTO-IR needs nvJitLink at run time and is not loadable by itself"
    return ArchVerdict("none", (), reason)


__all__ = [
    "ArchStatus",
    "ArchVerdict",
    "GpuArch",
    "arch_verdict",
    "parse_arch",
    "parse_ptx_isa",
    "ptx_compiles_for",
    "sass_runs_on",
]
