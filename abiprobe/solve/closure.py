"""The rest of a chosen set's install: every distribution its wheels require, resolved newest first.

The set's own wheels (stack members and the runtime wheels picked for them) are fixed roots. Everything
they require, recursively and with extras, is resolved by resolvelib against the same indexes, wheels
only (tags of the target), dependencies read from PEP 658 metadata, so no further wheel is ever read. An
extra is an identifier of its own, ``name[extra]``, that depends on its base at the same version. The
result completes the lock and the probe jobs: ``--no-deps`` installs of them give a working environment.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from email.parser import BytesParser
from typing import Any, Protocol

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from resolvelib import AbstractProvider, BaseReporter, ResolutionImpossible, Resolver

from abiprobe.errors import AbiprobeError
from abiprobe.index.models import Candidate, IndexFile
from abiprobe.requirements import marker_environment, parse_requirement
from abiprobe.solve.candidates import FilterOptions, StackCandidate, prefilter
from abiprobe.target import Target


class ClosureError(AbiprobeError):
    """The set's requirements cannot be completed from the indexes (one line says which)."""


class Listing(Protocol):
    """What the closure needs of a solve's collector: project listings and core metadata."""

    def candidates(self, project: str) -> tuple[Candidate, ...]: ...

    def metadata(self, file: IndexFile) -> bytes: ...


@dataclass(frozen=True)
class Req:
    name: NormalizedName
    extras: frozenset[str]
    specifier: SpecifierSet
    why: str
    root: str | None = None  # a root's exact filename

    @property
    def ident(self) -> str:
        return _ident(self.name, self.extras)


@dataclass(frozen=True)
class Pin:
    """A resolved wheel: a root (``sc`` set) or a listed candidate; ``extras`` for extra identifiers."""

    name: NormalizedName
    version: Version
    candidate: Candidate
    extras: frozenset[str] = frozenset()
    root: StackCandidate | None = field(default=None, compare=False)

    @property
    def ident(self) -> str:
        return _ident(self.name, self.extras)


def _ident(name: str, extras: frozenset[str]) -> str:
    return f"{name}[{','.join(sorted(extras))}]" if extras else name


class _Provider(AbstractProvider):  # type: ignore[type-arg]
    def __init__(
        self,
        roots: Mapping[NormalizedName, StackCandidate],
        listing: Listing,
        target: Target,
        pre: bool,
        follow: Callable[[str], bool] | None,
    ) -> None:
        self.roots, self.listing, self.target, self.follow = roots, listing, target, follow
        self.options = FilterOptions(pre=pre, window=None)
        self.env = marker_environment(target)
        self._listed: dict[str, list[Candidate]] = {}
        self._requires: dict[str, tuple[str, ...]] = {}

    def identify(self, requirement_or_candidate: Req | Pin) -> str:
        return requirement_or_candidate.ident

    def get_preference(self, identifier: str, resolutions: Any, candidates: Any, information: Any,
                       backtrack_causes: Any) -> Any:  # fmt: skip
        return (identifier.split("[")[0] not in self.roots, identifier)

    def _wheels(self, name: NormalizedName) -> list[Candidate]:
        if name not in self._listed:
            listed = self.listing.candidates(name)
            kept, _ = prefilter("closure", listed, SpecifierSet(), self.target, self.options, explain=False)
            self._listed[name] = [sc.candidate for sc in kept]
        return self._listed[name]

    def find_matches(self, identifier: str, requirements: Mapping[str, Iterator[Req]],
                     incompatibilities: Mapping[str, Iterator[Pin]]) -> Iterable[Pin]:  # fmt: skip
        reqs = list(requirements[identifier])
        bad = {p.version for p in incompatibilities[identifier]}
        name, extras = reqs[0].name, reqs[0].extras
        root = self.roots.get(name)
        if root is not None:
            pins = [Pin(name, root.version, root.candidate, extras, root)]
        else:
            pins = [Pin(name, c.version, c, extras) for c in self._wheels(name)]
        return [p for p in pins if p.version not in bad and all(self.is_satisfied_by(r, p) for r in reqs)]

    def is_satisfied_by(self, requirement: Req, candidate: Pin) -> bool:
        if requirement.root is not None and candidate.candidate.file.filename != requirement.root:
            return False
        return requirement.specifier.contains(candidate.version, prereleases=True)

    def get_dependencies(self, candidate: Pin) -> Iterable[Req]:
        label = f"{candidate.name} {candidate.version}"
        if candidate.extras:  # an extra: its base at the same version, plus what the extra adds
            yield Req(candidate.name, frozenset(), SpecifierSet(f"=={candidate.version}"), label)
        env = tuple(sorted(self.env.items()))
        for name, extras, specifier, shown in _applicable(
            self._requires_dist(candidate), candidate.extras, env
        ):
            if self.follow is None or self.follow(name):
                yield Req(name, extras, specifier, f"{label} requires {shown}")

    def _requires_dist(self, pin: Pin) -> tuple[str, ...]:
        if pin.root is not None and pin.root.summary is not None:
            return pin.root.summary.metadata.requires_dist
        key = pin.candidate.file.url
        if key not in self._requires:
            raw = self.listing.metadata(pin.candidate.file)
            msg = BytesParser().parsebytes(raw, headersonly=True)
            self._requires[key] = tuple(msg.get_all("Requires-Dist") or ())
        return self._requires[key]


@functools.lru_cache(maxsize=4096)
def _applicable(
    texts: tuple[str, ...], extras: frozenset[str], env_items: tuple[tuple[str, str], ...]
) -> tuple[tuple[NormalizedName, frozenset[str], SpecifierSet, str], ...]:
    """The requirements of one Requires-Dist list that apply on the target: without ``extras`` those
    whose marker holds; with them only what the extras add (the rest came with the base)."""
    env = dict(env_items)
    out = []
    for text in texts:
        req = parse_requirement(text)
        if req is None or not _applies(req, extras, env):
            continue
        shown = f"{req.name}{'[' + ','.join(sorted(req.extras)) + ']' if req.extras else ''}{req.specifier}"
        out.append((canonicalize_name(req.name), frozenset(req.extras), req.specifier, shown))
    return tuple(out)


def _applies(req: Requirement, extras: frozenset[str], env: dict[str, str]) -> bool:
    if req.marker is None:
        return not extras
    try:
        if not extras:
            return req.marker.evaluate(env)
        return "extra" in str(req.marker) and any(
            req.marker.evaluate({**env, "extra": e}) for e in sorted(extras)
        )
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False


def resolve_closure(
    roots: Sequence[StackCandidate],
    listing: Listing,
    target: Target,
    *,
    pre: bool = False,
    follow: Callable[[str], bool] | None = None,
) -> list[Pin]:
    """Every wheel the roots need beyond themselves, sorted by name (roots excluded); with ``follow``,
    only requirements on projects it accepts are followed (the runtime wheels' own little world)."""
    by_name = {canonicalize_name(str(r.name)): r for r in roots}
    provider = _Provider(by_name, listing, target, pre, follow)
    wanted = [
        Req(n, frozenset(), SpecifierSet(), "the chosen set", root=r.filename) for n, r in by_name.items()
    ]
    try:
        result = Resolver(provider, BaseReporter()).resolve(wanted, max_rounds=2000)
    except ResolutionImpossible as exc:
        causes = "; ".join(sorted({c.requirement.why for c in exc.causes})) or "no candidates"
        raise ClosureError(f"the chosen set's dependencies cannot be completed: {causes}") from None
    pins = [p for p in result.mapping.values() if not p.extras and p.name not in by_name]
    return sorted(pins, key=lambda p: p.name)


class Completion:
    """``complete(wheels)``: the dependency wheels that make ``wheels`` a whole install (memoised);
    when that is impossible the reason is kept in ``problems`` and nothing is added."""

    def __init__(self, listing: Listing, target: Target, *, pre: bool = False) -> None:
        self.listing, self.target, self.pre = listing, target, pre
        self.problems: list[str] = []
        self._memo: dict[tuple[str, ...], list[StackCandidate]] = {}

    def __call__(self, wheels: Sequence[StackCandidate]) -> list[StackCandidate]:
        key = tuple(sorted(w.filename for w in wheels))
        if key not in self._memo:
            try:
                pins = resolve_closure(wheels, self.listing, self.target, pre=self.pre)
                self._memo[key] = [StackCandidate("dependency", p.candidate, 0) for p in pins]
            except AbiprobeError as exc:
                self.problems.append(str(exc))
                self._memo[key] = []
        return self._memo[key]
