"""Which distributions of an installed environment a check judges: the stack and what it requires.

``import torch`` never loads mpi4py's MPI builds or numba's threading layers, so an environment check asks
"will my stack import": the units of the scoped distributions (with their whole load trees, which may reach
any file of the environment) and the set checks that concern them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from packaging.utils import canonicalize_name

from abiprobe.analyze.analysis import SetAnalysis, UnitAnalysis
from abiprobe.analyze.layout import dist_label
from abiprobe.model.facts import WheelFacts
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.stack import Stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import Verdict

OPTIONAL_NOTE = "optional: loaded only when its module is imported, not by importing the stack"


def stack_roots(wheels: Sequence[WheelFacts], stack: Stack) -> tuple[str, ...]:
    """The stack's distributions as the roots of an environment check: every core, companion and known
    provider, and any installed provider of a shim by prefix."""
    names: list[str] = list(stack.project_names())
    names += [w.metadata.name for w in wheels if stack.role_of(w.metadata.name) is not None]
    return tuple(dict.fromkeys(str(canonicalize_name(n)) for n in names))


def requirement_closure(wheels: Sequence[WheelFacts], roots: Iterable[str], target: Target) -> frozenset[str]:
    """Canonical names of the ``roots`` present in ``wheels`` and of every distribution they require
    (transitively, markers evaluated for the target, extras not followed)."""
    by_name = {canonicalize_name(w.metadata.name): w for w in wheels}
    todo = [n for n in (canonicalize_name(r) for r in roots) if n in by_name]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for req in applicable_requirements(by_name[name].metadata.requires_dist, target):
            dep = canonicalize_name(req.name)
            if dep in by_name and dep not in seen:
                todo.append(dep)
    return frozenset(seen)


def _labels(wheels: Sequence[WheelFacts], names: frozenset[str]) -> frozenset[str]:
    return frozenset(dist_label(w) for w in wheels if canonicalize_name(w.metadata.name) in names)


def _concerns(v: Verdict, labels: frozenset[str]) -> bool:
    if v.subject in labels or v.subject == "set":
        return True
    dists = v.evidence.get("distributions", ())
    return v.check == "files" and any(d in labels for d in dists)


def restrict(analysis: SetAnalysis, wheels: Sequence[WheelFacts], names: frozenset[str]) -> SetAnalysis:
    """The analysis cut to the distributions ``names``: their extensions, the libraries torch preloads
    (when torch is among them), and the set verdicts about them."""
    labels = _labels(wheels, names)
    units = tuple(
        u for u in analysis.units if u.dist in labels or (u.kind == "preloaded" and "torch" in names)
    )
    set_verdicts = tuple(v for v in analysis.set_verdicts if _concerns(v, labels))
    return replace(
        analysis,
        wheels=tuple(w for w in analysis.wheels if w in labels),
        units=units,
        set_verdicts=set_verdicts,
    )


def mark_optional(analysis: SetAnalysis, wheels: Sequence[WheelFacts], core: frozenset[str]) -> SetAnalysis:
    """Every unit outside ``core`` (not a library torch preloads) keeps its verdicts, with failures said to
    be optional."""
    labels = _labels(wheels, core)
    units = tuple(u if u.dist in labels or u.kind == "preloaded" else _optional(u) for u in analysis.units)
    return replace(analysis, units=units)


def _optional(unit: UnitAnalysis) -> UnitAnalysis:
    verdicts = tuple(
        replace(
            v, explanation=f"{v.explanation} ({OPTIONAL_NOTE})", evidence={**v.evidence, "optional": True}
        )
        if v.status in ("fail", "system")
        else v
        for v in unit.verdicts
    )
    return replace(unit, verdicts=verdicts)
