"""Which per-architecture wheel of a shim a target loads, by the shim's package's own selection order.

flashinfer calls these wheels *providers*; in abiprobe's code they are *arch wheels* (the word "provider"
is kept for flashinfer's term, and for the stack file's and the matrix document's keys).


flashinfer-jit-cache is a shim; each GPU target gets a provider wheel ``flashinfer-jit-cache-<tag>``
(flashinfer-ai/flashinfer ``docs/design_docs/jit_cache_provider_wheels.md``, names from
``flashinfer-jit-cache-provider/package_config.py``), pinned by the shim to its own version
(``flashinfer-jit-cache/build_backend.py``). At run time flashinfer takes a module from a provider whose
SASS runs on the GPU by CUDA's binary-compatibility rules (providers carry no PTX), the closest first:
the exact target (``sm121a`` on a 12.1 GPU) before a family target (``sm120f``) before an unsuffixed
baseline (``sm120``) (flashinfer ``flashinfer/jit/env.py``; flashinfer PR 5096 states that order; the ranking
is :mod:`abiprobe.model.arch_ranking`'s). Pure: candidates and a target in, the choice and its reason out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement

from abiprobe.model.arch_ranking import ranked_arch_wheels
from abiprobe.model.cuda_arch import GpuArch
from abiprobe.model.stack import ArchWheels
from abiprobe.solve.candidates import StackCandidate


@dataclass(frozen=True)
class ArchWheelChoice:
    """For one shim wheel: the provider the target loads (``chosen``, a distribution name) and why, or
    why none; ``asked`` are the provider projects considered, in selection order."""

    shim: str
    chosen: str | None
    reason: str
    asked: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"shim": self.shim, "chosen": self.chosen, "reason": self.reason, "asked": list(self.asked)}


def named_tags(shim: StackCandidate, arch_wheels: ArchWheels) -> tuple[str, ...]:
    """The provider tags a shim wheel's Requires-Dist names (a legacy monolithic wheel names none)."""
    if shim.summary is None:
        return ()
    tags: list[str] = []
    for text in shim.summary.metadata.requires_dist:
        try:
            name = Requirement(text).name
        except InvalidRequirement:
            continue
        tag = arch_wheels.tag_of(name)
        if tag is not None and tag not in tags:
            tags.append(tag)
    return tuple(tags)


def choose_arch_wheel(
    shim: StackCandidate,
    arch_wheels: ArchWheels,
    found: Mapping[str, Sequence[StackCandidate]],
    target: GpuArch | None,
    where: str,
) -> tuple[ArchWheelChoice | None, StackCandidate | None]:
    """The provider wheel of ``shim``'s exact version the target loads, by flashinfer's order.

    ``found`` holds each provider tag's candidates. None when the shim is a legacy wheel that names no
    providers and none exist at its version (its own files hold the kernels)."""
    tags = list(dict.fromkeys([*named_tags(shim, arch_wheels), *found]))
    # of twin files (one filename, other hashes) the one whose bytes were read first
    same = {
        t: sorted((c for c in found.get(t, ()) if c.version == shim.version), key=lambda c: c.info is None)
        for t in tags
    }
    if not named_tags(shim, arch_wheels) and not any(same.values()):
        return None, None
    if target is None:
        why = "no GPU architecture given: which provider loads cannot be known"
        return ArchWheelChoice(str(shim.name), None, why), None
    ranked = ranked_arch_wheels(tags, target)
    asked = tuple(str(arch_wheels.name(r.tag)) for r in ranked)
    passed: list[str] = []
    for r in ranked:
        wheels = same.get(r.tag) or []
        if wheels:
            reason = r.reason(target)
            if passed:
                reason += f" (no {', '.join(passed)} {shim.version} found)"
            return ArchWheelChoice(str(shim.name), str(arch_wheels.name(r.tag)), reason, asked), wheels[0]
        passed.append(r.tag)
    if not ranked:
        why = f"no {shim.name} provider targets sm_{target.sm} (known: {', '.join(tags) or 'none'})"
    else:
        why = f"no {', '.join(asked)} {shim.version} found on {where}"
    why += ": flashinfer compiles its kernels at run time (JIT) instead"
    return ArchWheelChoice(str(shim.name), None, why, asked), None
