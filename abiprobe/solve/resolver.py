"""The stack resolved by resolvelib over the matrix: wheels are candidates, static verdicts are dependencies.

Each role is one identifier (so ``sglang-kernel`` and ``sgl-kernel`` are never both picked); companions
are pinned to their core's exact wheel; CUDA is a virtual identifier with one candidate, the target,
as uv models ``cuda@13.0``. A member's dependency on the base lists the base wheels its analysis
passed with, so the resolver backtracks past combinations the loader simulation rejects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version
from resolvelib import AbstractProvider, BaseReporter, ResolutionImpossible, ResolutionTooDeep, Resolver

from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.stack import Stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import Status
from abiprobe.solve.matrix import Group
from abiprobe.solve.preference import MAX_ROUNDS

CUDA_ID = "cuda"


class Compatibility(Protocol):
    """What the matrix knows: a group alone on the target, and two groups together."""

    def alone(self, group: Group) -> tuple[Status, str]: ...

    def together(self, earlier: Group, later: Group) -> tuple[Status, str]: ...


@dataclass(frozen=True)
class Need:
    """A requirement on an identifier: version bounds, an optional project, an optional allowed set."""

    identifier: str
    why: str
    specifier: SpecifierSet = field(default_factory=SpecifierSet)
    project: str | None = None
    allowed: frozenset[str] | None = None

    def accepts(self, pick: Pick) -> bool:
        if self.project is not None and pick.name != self.project:
            return False
        if self.allowed is not None and pick.key not in self.allowed:
            return False
        return not self.specifier or self.specifier.contains(pick.version, prereleases=True)


@dataclass(frozen=True)
class Pick:
    """A resolvelib candidate: one group's core wheel, a companion wheel, or the virtual CUDA target."""

    identifier: str
    key: str
    name: str
    version: Version
    label: str
    needs: tuple[Need, ...] = field(default=(), compare=False, hash=False)


@dataclass(frozen=True)
class Resolution:
    """The chosen wheels by role (``None`` when no set passes) and one line per conflict found."""

    chosen: Mapping[str, str] | None
    conflicts: tuple[str, ...] = ()


class ResolverAdapter(AbstractProvider[Need, Pick, str]):
    """resolvelib adapter: picks come pre-built from the matrix groups; no I/O happens here."""

    def __init__(self, picks: Mapping[str, Sequence[Pick]], order: Sequence[str]) -> None:
        self.picks = picks
        self.order = {ident: i for i, ident in enumerate(order)}

    def identify(self, requirement_or_candidate: Need | Pick) -> str:
        return requirement_or_candidate.identifier

    def get_preference(self, identifier: str, *args: Any, **kwargs: Any) -> tuple[int, int]:
        return (0 if identifier == CUDA_ID else 1, self.order.get(identifier, len(self.order)))

    def find_matches(
        self,
        identifier: str,
        requirements: Mapping[str, Iterator[Need]],
        incompatibilities: Mapping[str, Iterator[Pick]],
    ) -> list[Pick]:
        needs = list(requirements[identifier])
        bad = {p.key for p in incompatibilities[identifier]}
        return [
            p for p in self.picks.get(identifier, ()) if p.key not in bad and all(n.accepts(p) for n in needs)
        ]

    def is_satisfied_by(self, requirement: Need, candidate: Pick) -> bool:
        return requirement.accepts(candidate)

    def get_dependencies(self, candidate: Pick) -> Sequence[Need]:
        return candidate.needs


def rules_out(status: str, *, honour_pins: bool = True) -> bool:
    """Whether a verdict keeps a group (or a pair) out of the chosen set: a failure, or no verdict at all
    (a wheel that could not be read was not checked, so it cannot be the answer to "what passes"), or,
    while declared requirements are honoured, a set one of them forbids."""
    return status in ("fail", "unknown", "system") or (honour_pins and status == "blocked")


def build_picks(
    stack: Stack,
    groups: Mapping[str, Sequence[Group]],
    target: Target,
    compat: Compatibility,
    *,
    honour_pins: bool = True,
) -> dict[str, list[Pick]]:
    """Every group becomes a pick whose needs encode Requires-Dist, companions, CUDA and verdicts.

    Without ``honour_pins`` the members' Requires-Dist on each other are left out (as an installer's
    override would), so the resolution finds the newest set the loader checks pass for."""
    cuda = Version(f"{target.cuda[0]}.{target.cuda[1]}")
    picks: dict[str, list[Pick]] = {CUDA_ID: [Pick(CUDA_ID, "cuda", CUDA_ID, cuda, f"cuda {cuda}")]}
    roles = stack.roles
    # the core names a member's Requires-Dist may pin, each with its role (companions and providers are
    # pinned to their core's exact wheel instead)
    requirable: dict[str, str] = {
        n: m.role for m in stack.members for n in m.names if stack.role_of(n) == m.role
    }
    for i, role in enumerate(roles):
        for g in groups.get(role, ()):
            needs: list[Need] = []
            status, why = compat.alone(g)
            if rules_out(status, honour_pins=honour_pins):
                needs.append(Need(CUDA_ID, f"{g.id} on the target: {why}", allowed=frozenset()))
            needs += _cuda_needs(g)
            if honour_pins:
                needs += _requires_needs(g, requirable, target)
            for earlier_role in roles[:i]:
                allowed, reasons = set(), []
                for h in groups.get(earlier_role, ()):
                    st, why = compat.together(h, g)
                    if rules_out(st, honour_pins=honour_pins):
                        reasons.append(f"{h.id}: {why}")
                    else:
                        allowed.add(h.key)
                if allowed:
                    text = f"passes static checks with {len(allowed)} {earlier_role} candidate(s)"
                else:
                    text = f"no {earlier_role} candidate passes static checks with it"
                if reasons:
                    text += "; ruled out " + "; ".join(reasons[:3])
                needs.append(Need(earlier_role, text, allowed=frozenset(allowed)))
            for comp in g.companions:
                needs.append(Need(comp.name, f"{comp.name} must equal {g.id}", allowed=frozenset({comp.key})))
                picks.setdefault(comp.name, []).append(
                    Pick(comp.name, comp.key, comp.name, comp.version, f"{comp.name}=={comp.version}")
                )
            picks.setdefault(role, []).append(
                Pick(role, g.key, g.core.name, g.core.version, g.id, tuple(needs))
            )
    for ident in picks:
        picks[ident].sort(key=lambda p: p.version, reverse=True)
    return picks


def _cuda_needs(g: Group) -> list[Need]:
    out = []
    for w in g.wheels:
        if w.variant.cpu:
            out.append(Need(CUDA_ID, f"{w.label()} is a CPU-only build", allowed=frozenset()))
        for major in w.variant.majors:
            out.append(Need(CUDA_ID, f"{w.label()} is built for CUDA {major}", SpecifierSet(f"=={major}.*")))
    return out


def _requires_needs(g: Group, requirable: Mapping[str, str], target: Target) -> list[Need]:
    out = []
    for w in g.wheels:
        if w.summary is None:
            continue
        for req in applicable_requirements(w.summary.metadata.requires_dist, target):
            name = canonicalize_name(req.name)
            role = requirable.get(name)
            if role is None or role == g.role:
                continue
            out.append(Need(role, f"{w.label()} requires {req}", req.specifier, project=name))
    return out


def resolve(stack: Stack, picks: Mapping[str, Sequence[Pick]], target: Target) -> Resolution:
    """Newest passing set by stack order (torch first), or the conflicts that rule every set out."""
    adapter = ResolverAdapter(picks, [CUDA_ID, *stack.roles])
    roots: list[Need] = [
        Need(
            CUDA_ID,
            f"target CUDA {target.cuda[0]}.{target.cuda[1]}",
            SpecifierSet(f"=={target.cuda[0]}.{target.cuda[1]}"),
        )
    ]
    for m in stack.members:
        roots.append(Need(m.role, f"stack role {m.role} {m.specifier}".strip(), m.specifier))
    try:
        result = Resolver(adapter, BaseReporter()).resolve(roots, max_rounds=MAX_ROUNDS)
    except ResolutionImpossible as exc:
        return Resolution(None, tuple(_describe_causes(exc.causes)))
    except ResolutionTooDeep:
        return Resolution(None, (f"no set was found within {MAX_ROUNDS:,} resolver rounds",))
    chosen = {ident: pick.label for ident, pick in result.mapping.items() if ident != CUDA_ID}
    return Resolution(chosen)


def _describe_causes(causes: Iterable[Any]) -> list[str]:
    lines: list[str] = []
    for cause in causes:
        need: Need = cause.requirement
        parent: Pick | None = cause.parent
        who = parent.label if parent is not None else "the stack"
        line = f"{who}: {need.why}" if parent is not None else f"{who} needs {need.identifier}: {need.why}"
        if line not in lines:
            lines.append(line)
    return lines
