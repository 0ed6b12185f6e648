"""The CUDA variant of a wheel: the CUDA majors it was built for, from its local label, its metadata and
the sonames its libraries need (so an unlabelled CUDA 12 wheel is still recognised).

Pure: a candidate's version, its Requires-Dist and, once read, its facts in; a :class:`CudaVariant` out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from abiprobe.model.candidate import Candidate
from abiprobe.model.facts import WheelFacts, WheelSummary
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.sonames import cuda_major_of_soname
from abiprobe.model.target import Target

_LABEL = re.compile(r"(?:^|[._-])cu(\d{2,3})(?=$|[._-])")
_NVIDIA_SUFFIX = re.compile(r"^nvidia-.+-cu(\d{2})$")
_CUDA_META_PROJECTS = ("cuda-toolkit", "cuda-runtime", "cuda-bindings", "cuda-python")
_UNSUFFIXED_RUNTIME = re.compile(
    r"^nvidia-(cuda-runtime|cuda-nvrtc|cublas|cufft|cusparse|nvjitlink|cuda-cupti)$"
)


@dataclass(frozen=True)
class CudaVariant:
    """The CUDA majors a wheel was built for; ``majors`` empty means CUDA-agnostic or not known."""

    majors: tuple[int, ...] = ()
    cpu: bool = False
    evidence: tuple[str, ...] = ()

    def fits(self, cuda_major: int) -> bool:
        return not self.cpu and all(m == cuda_major for m in self.majors)

    def excludes(self, cuda_major: int) -> bool:
        """Whether a major it names already rules it out (a variant that names none says nothing yet)."""
        return bool(self.majors) and not self.fits(cuda_major)

    def describe(self) -> str:
        if self.cpu:
            what = "a CPU-only build"
        elif self.majors:
            what = "built for CUDA " + " and ".join(str(m) for m in self.majors)
        else:
            what = "not CUDA-specific"
        return f"{what} ({'; '.join(self.evidence)})" if self.evidence else what

    def to_json(self) -> dict[str, Any]:
        return {"majors": list(self.majors), "cpu": self.cpu, "evidence": list(self.evidence)}


def variant_from_label(version: Version) -> CudaVariant:
    """``+cu130`` -> CUDA 13, ``+cu128`` -> 12, ``+cpu`` -> CPU-only; anything else says nothing."""
    local = version.local
    if not local:
        return CudaVariant()
    if local == "cpu" or local.startswith("cpu."):
        return CudaVariant(cpu=True, evidence=(f"local label +{local}",))
    m = _LABEL.search(local)
    if not m:
        return CudaVariant()
    digits = m.group(1)
    return CudaVariant(majors=(int(digits[:-1]),), evidence=(f"local label +{local}",))


def variant_from_requirements(requirements: Iterable[Requirement]) -> CudaVariant:
    """CUDA majors implied by ``cuda-toolkit==13.0.2``, ``nvidia-*-cu12`` and pinned unsuffixed runtimes."""
    majors: set[int] = set()
    evidence: list[str] = []
    for req in requirements:
        name = canonicalize_name(req.name)
        major: int | None = None
        m = _NVIDIA_SUFFIX.match(name)
        if m:
            major = int(m.group(1))
        elif name in _CUDA_META_PROJECTS or _UNSUFFIXED_RUNTIME.match(name):
            major = _pinned_major(req.specifier)
        if major is not None:
            majors.add(major)
            evidence.append(f"requires {req.name}{req.specifier}")
    return CudaVariant(majors=tuple(sorted(majors)), evidence=tuple(evidence[:3]))


def _pinned_major(spec: SpecifierSet) -> int | None:
    """The one CUDA major a specifier admits (``==13.0.2``, ``~=13.0``, ``>=13,<14``); None for open
    ranges such as ``cuda-python>=12.0``, which CUDA 13 releases satisfy too."""
    if not any(re.match(r"^\d+", s.version) for s in spec):
        return None
    admitted = {
        major
        for major in range(9, 21)
        for probe in (f"{major}.0", f"{major}.0.2", f"{major}.4.1", f"{major}.9.99")
        if spec.contains(probe, prereleases=True)
    }
    return admitted.pop() if len(admitted) == 1 else None


def variant_from_facts(facts: WheelFacts | WheelSummary) -> CudaVariant:
    """CUDA majors of the CUDA sonames the wheel's libraries need (libcudart.so.12 -> 12)."""
    summary = facts.summary() if isinstance(facts, WheelFacts) else facts
    majors: dict[int, str] = {}
    for soname in summary.needed:
        major = cuda_major_of_soname(soname)
        if major is not None:
            majors.setdefault(major, soname)
    return CudaVariant(
        majors=tuple(sorted(majors)),
        evidence=tuple(f"needs {majors[m]}" for m in sorted(majors)),
    )


def declared_variant(
    candidate: Candidate, requires_dist: Sequence[str] | None, target: Target
) -> CudaVariant:
    """What the version's local label and, when the index serves it, the wheel's metadata file say about
    its CUDA major, read before any of its bytes: a major other than the target's already excludes it,
    whatever its sonames add (:meth:`CudaVariant.fits` wants every major to be the target's)."""
    parts = [variant_from_label(candidate.version)]
    if requires_dist is not None:
        parts.append(variant_from_requirements(applicable_requirements(requires_dist, target)))
    return _combined(parts)


def infer_variant(
    candidate: Candidate, facts: WheelFacts | WheelSummary | None, target: Target
) -> CudaVariant:
    """Combine label, metadata and sonames; every source that says something is kept as evidence."""
    if facts is None:
        return declared_variant(candidate, None, target)
    declared = declared_variant(candidate, facts.metadata.requires_dist, target)
    return _combined([declared, variant_from_facts(facts)])


def _combined(parts: Sequence[CudaVariant]) -> CudaVariant:
    """Every major any part names, CPU-only if one says so, and all their evidence in order."""
    return CudaVariant(
        majors=tuple(sorted({m for p in parts for m in p.majors})),
        cpu=any(p.cpu for p in parts),
        evidence=tuple(e for p in parts for e in p.evidence),
    )
