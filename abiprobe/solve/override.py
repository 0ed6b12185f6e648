"""The other answer for an upgrade: the newest set that loads if the members' declared pins were overridden.

The chosen set honours every Requires-Dist between stack members. A newer set may pass every loader check
and be refused only by such a pin (``sglang-kernel 0.4.10`` requires ``torch==2.14.1``): it is
``blocked``, not broken. This module resolves again without those pins and writes how to install that
set anyway: a uv ``--override`` recipe and a pip order (the rest with its dependencies, then the
members whose pins are overridden with ``--no-deps``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from packaging.utils import canonicalize_name

from abiprobe.model.hosts import neutral
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.verdict import Verdict
from abiprobe.solve.matrix import Group, Matrix, MatrixBuilder
from abiprobe.solve.resolver import Resolution, build_picks, resolve

OVERRIDES_FILE = "overrides.txt"


@dataclass(frozen=True)
class BlockingRequirement:
    """A declared requirement that forbids a set the loader checks pass for."""

    dist: str  # the wheel declaring it
    by: str  # its label, "sglang-kernel 0.4.10"
    requirement: str  # "torch==2.14.1"
    project: str  # the project it names
    found: str  # the version the set has

    @classmethod
    def of(cls, v: Verdict) -> BlockingRequirement:
        e = {k: str(x) for k, x in v.evidence.items()}
        dist, requirement = e.get("dist", ""), e.get("requirement", "")
        return cls(dist, v.subject, requirement, e.get("project", ""), e.get("found", ""))

    def to_json(self) -> dict[str, str]:
        return {"by": self.by, "requirement": self.requirement, "project": self.project, "found": self.found}


def blocking(verdicts: Sequence[Verdict]) -> list[BlockingRequirement]:
    """The blocking requirements among ``verdicts``, each once."""
    found = [BlockingRequirement.of(v) for v in verdicts if v.status == "blocked"]
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class OverrideSet:
    """The newest set passing the loader checks with pins overridden, and how to install it."""

    chosen: Mapping[str, str]
    blocked_by: tuple[BlockingRequirement, ...]
    overrides: tuple[str, ...]  # the lines of an overrides file: "torch==2.15.0"
    uv: tuple[str, ...]  # shell lines
    pip: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "chosen": dict(self.chosen),
            "blocked_by": [b.to_json() for b in self.blocked_by],
            "overrides": list(self.overrides),
            "uv": list(self.uv),
            "pip": list(self.pip),
        }


def override_set(matrix: Matrix, builder: MatrixBuilder, honoured: Resolution) -> OverrideSet | None:
    """The newest set whose loader checks pass when pins between members are ignored; None when it is
    the chosen set itself (no pin held anything back) or when no set passes even so."""
    stack, target = matrix.stack, matrix.target
    picks = build_picks(stack, matrix.groups, target, builder, honour_pins=False)
    free = resolve(stack, picks, target)
    if free.chosen is None or free.chosen == honoured.chosen:
        return None
    groups = [matrix.group(role, free.chosen[role]) for role in stack.roles if role in free.chosen]
    verdicts = [v for a, b in combinations(groups, 2) for v in builder.set_verdicts(a, b)]
    blocked = blocking(verdicts)
    if not blocked:
        return None
    overrides = tuple(dict.fromkeys(_pin_of(b.project, groups) or f"{b.project}=={b.found}" for b in blocked))
    return OverrideSet(free.chosen, tuple(blocked), overrides, *_recipes(groups, blocked, overrides, matrix))


def _pin_of(project: str, groups: Sequence[Group]) -> str | None:
    """``name==version`` of the set's wheel of ``project`` (with its local label: ``torch==2.9.0+cu130``)."""
    for g in groups:
        for w in g.wheels:
            if w.name == canonicalize_name(project):
                return f"{w.name}=={w.version}"
    return None


def _recipes(
    groups: Sequence[Group], blocked: Sequence[BlockingRequirement], overrides: Sequence[str], matrix: Matrix
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    wheels = [w for g in groups for w in g.wheels]
    specs = [f"{w.name}=={w.version}" for w in wheels]
    indexes = _index_flags(groups)
    uv = (
        f"printf '%s\\n' {' '.join(overrides)} > {OVERRIDES_FILE}",
        " ".join(["uv pip install", f"--override {OVERRIDES_FILE}", *indexes, *specs]),
    )
    no_deps = {canonicalize_name(b.dist) for b in blocked if b.dist}
    names = {w.name for w in wheels}
    overridden = {canonicalize_name(o.split("==")[0]) for o in overrides}
    rest = [f"{w.name}=={w.version}" for w in wheels if w.name not in no_deps]
    # what the --no-deps members need beyond the set and the overridden projects, installed with the rest
    for w in wheels:
        if w.name not in no_deps or w.summary is None:
            continue
        for req in applicable_requirements(w.summary.metadata.requires_dist, matrix.target):
            name = canonicalize_name(req.name)
            if name not in names and name not in overridden and str(req) not in rest:
                rest.append(str(req))
    last = [f"{w.name}=={w.version}" for w in wheels if w.name in no_deps]
    pip = (
        " ".join(["pip install", *indexes, *(_quoted(r) for r in rest)]),
        " ".join(["pip install --no-deps", *indexes, *last]),
    )
    return uv, pip


def _quoted(requirement: str) -> str:
    return f"'{requirement}'" if any(c in requirement for c in "<>;! ") else requirement


def _index_flags(groups: Sequence[Group]) -> list[str]:
    """``--extra-index-url`` for every index the set's wheels come from except the default registry
    (the user's own installer configuration serves those)."""
    urls = [w.candidate.file.index_url for g in groups for w in g.wheels]
    kept = [u for u in dict.fromkeys(urls) if u and neutral(u) == u]
    return [f"--extra-index-url {u}" for u in kept]
