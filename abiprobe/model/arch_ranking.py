"""Which per-architecture wheel a target loads first, by the order flashinfer picks one at run time.

flashinfer takes a module from a provider wheel whose SASS runs on the GPU by CUDA's binary-compatibility
rules (providers carry no PTX), the closest first: the exact target (``sm121a`` on a 12.1 GPU) before a
family target (``sm120f``) before an unsuffixed baseline (``sm120``) (flashinfer ``flashinfer/jit/env.py``;
flashinfer PR 5096 states that order). Pure: tags and a target in, the ranked tags out; which of a shim's
wheels is chosen from them is :mod:`abiprobe.solve.arch_wheels`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from abiprobe.errors import UsageError
from abiprobe.model.cuda_arch import GpuArch, parse_arch, sass_runs_on
from abiprobe.model.facts import GpuCode

ArchMatch = Literal["exact", "family", "unsuffixed"]
_KINDS: dict[str, ArchMatch] = {"a": "exact", "f": "family", "": "unsuffixed"}
_ORDER: tuple[ArchMatch, ...] = ("exact", "family", "unsuffixed")


@dataclass(frozen=True)
class RankedArchWheel:
    """A provider tag whose code runs on the target, with the kind of match that ranks it."""

    tag: str
    arch: GpuArch
    kind: ArchMatch

    def reason(self, target: GpuArch) -> str:
        where = f"sm_{target.sm}"
        if self.kind == "exact":
            return f"{self.tag} is the exact target of {where}"
        if self.kind == "family":
            return f"{self.tag} is a family target covering {where}"
        return f"{self.tag} is an unsuffixed baseline that runs on {where}"


def tag_arch(tag: str) -> GpuArch | None:
    """``sm120f`` -> 12.0f; None for a tag that names no architecture."""
    try:
        return parse_arch(tag)
    except UsageError:
        return None


def ranked_arch_wheels(tags: Iterable[str], target: GpuArch) -> tuple[RankedArchWheel, ...]:
    """The tags whose SASS runs on ``target``, in the order flashinfer prefers them: exact, family,
    unsuffixed; within a kind the nearest architecture first."""
    found: dict[str, RankedArchWheel] = {}
    for tag in tags:
        arch = tag_arch(tag)
        if arch is None:
            continue
        if sass_runs_on(GpuCode("sass", arch.sm, arch.variant), target):
            found[tag] = RankedArchWheel(tag, arch, _KINDS[arch.variant])
    return tuple(sorted(found.values(), key=lambda p: (_ORDER.index(p.kind), target.sm - p.arch.sm, p.tag)))
