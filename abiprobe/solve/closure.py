"""The rest of a chosen set's install: every distribution its wheels require, resolved newest first.

The set's own wheels (stack members and the runtime wheels picked for them) are fixed roots. Everything
they require, recursively and with extras, is resolved by resolvelib against the same indexes, wheels
only (tags of the target), dependencies read from PEP 658 metadata, so no further wheel is ever read. An
extra is an identifier of its own, ``name[extra]``, that depends on its base at the same version. The
result completes the lock and the probe jobs: ``--no-deps`` installs of them give a working environment.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version
from resolvelib import AbstractProvider, BaseReporter, ResolutionImpossible, ResolutionTooDeep, Resolver

from abiprobe.errors import AbiprobeError
from abiprobe.model.candidate import Candidate, IndexFile, candidates_from_files
from abiprobe.model.hosts import concrete, neutral
from abiprobe.model.requirements import applicable_requirements, requires_dist_of
from abiprobe.model.target import Target
from abiprobe.solve.candidates import FilterOptions, StackCandidate, prefilter
from abiprobe.solve.codedigest import code_digest
from abiprobe.solve.ports import AnalysisStore
from abiprobe.solve.preference import MAX_ROUNDS, PreferenceOrder


class ClosureError(AbiprobeError):
    """The set's requirements cannot be completed from the indexes (one line says which). ``unwheeled``:
    the projects it failed on because no wheel of theirs for the target meets what is asked of them (an
    sdist-only release, which pip would build), with that line each; empty for a true conflict."""

    def __init__(self, message: str, unwheeled: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.unwheeled = dict(unwheeled or {})


class ClosureTooDeep(AbiprobeError):
    """The resolution ran past pip's round limit: neither a result nor a proof that none exists."""


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
    why: str = field(default="", compare=False)  # "torch 2.9.0 requires nvidia-cuda-runtime==13.0.96"

    @property
    def ident(self) -> str:
        return _ident(self.name, self.extras)


@dataclass(frozen=True)
class UserWants:
    """Requirements the user names beside the roots (ranges, bare names, extras) and constraints
    (``-c``: they narrow a project's versions without asking for it)."""

    requirements: tuple[Requirement, ...] = ()
    constraints: tuple[Requirement, ...] = ()

    def constraint_map(self) -> dict[str, SpecifierSet]:
        out: dict[str, SpecifierSet] = {}
        for c in self.constraints:
            name = canonicalize_name(c.name)
            out[name] = out.get(name, SpecifierSet()) & c.specifier
        return out

    def reqs(self) -> list[Req]:
        return [
            Req(canonicalize_name(r.name), frozenset(r.extras), r.specifier, f"the requirement {r}")
            for r in self.requirements
        ]


def _ident(name: str, extras: frozenset[str]) -> str:
    return f"{name}[{','.join(sorted(extras))}]" if extras else name


class _ClosureAdapter(AbstractProvider):  # type: ignore[type-arg]
    """resolvelib's view of the indexes: every listed wheel of a project is a candidate."""

    def __init__(
        self,
        roots: Mapping[NormalizedName, StackCandidate],
        listing: Listing,
        target: Target,
        options: FilterOptions,
        follow: Callable[[str], bool] | None,
        roots_win: bool = False,
        constraints: Mapping[str, SpecifierSet] | None = None,
        requested: Sequence[str] = (),
    ) -> None:
        self.roots, self.listing, self.target, self.follow = roots, listing, target, follow
        self.roots_win = roots_win
        self.options = options
        self.constraints = constraints or {}
        self.order = PreferenceOrder([*requested, *roots])
        self._listed: dict[str, list[Candidate]] = {}
        self._requires: dict[str, tuple[str, ...]] = {}

    def identify(self, requirement_or_candidate: Req | Pin) -> str:
        return requirement_or_candidate.ident

    def narrow_requirement_selection(self, identifiers: Any, resolutions: Any, candidates: Any,
                                     information: Any, backtrack_causes: Any) -> Any:  # fmt: skip
        return self.order.narrow(identifiers, resolutions, backtrack_causes)

    def get_preference(self, identifier: str, resolutions: Any, candidates: Any, information: Any,
                       backtrack_causes: Any) -> Any:  # fmt: skip
        return self.order.key(identifier, information)

    def _wheels(self, name: NormalizedName) -> list[Candidate]:
        if name not in self._listed:
            listed = self.listing.candidates(name)
            kept, _ = prefilter(
                "closure", listed, SpecifierSet(), self.target, self.options, explain=False, stack_wheel=False
            )
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
            allowed = self.constraints.get(name)
            pins = [
                Pin(name, c.version, c, extras)
                for c in self._wheels(name)
                if allowed is None or allowed.contains(c.version, prereleases=True)
            ]
        return [p for p in pins if p.version not in bad and all(self.is_satisfied_by(r, p) for r in reqs)]

    def is_satisfied_by(self, requirement: Req, candidate: Pin) -> bool:
        if requirement.root is not None and candidate.candidate.file.filename != requirement.root:
            return False
        if self.roots_win and candidate.root is not None:  # as an override would: the named wheel stays
            return True
        return requirement.specifier.contains(candidate.version, prereleases=True)

    def get_dependencies(self, candidate: Pin) -> Iterable[Req]:
        label = f"{candidate.name} {candidate.version}"
        if (
            candidate.extras
        ):  # an extra: its base at the same version (why: the extra's own), plus what it adds
            yield Req(candidate.name, frozenset(), SpecifierSet(f"=={candidate.version}"), "")
        for req in applicable_requirements(self._requires_dist(candidate), self.target, candidate.extras):
            name = canonicalize_name(req.name)
            if self.follow is None or self.follow(name):
                extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
                override = self.options.override_of(name)
                specifier = override.specifier if override is not None else req.specifier
                shown = f"{req.name}{extras}{req.specifier}"
                if override is not None:
                    shown += f", overridden by {override.describe()}"
                yield Req(name, frozenset(req.extras), specifier, f"{label} requires {shown}")

    def _requires_dist(self, pin: Pin) -> tuple[str, ...]:
        if pin.root is not None and pin.root.summary is not None:
            return pin.root.summary.metadata.requires_dist
        key = pin.candidate.file.url
        if key not in self._requires:
            self._requires[key] = requires_dist_of(self.listing.metadata(pin.candidate.file))
        return self._requires[key]


class _Recording:
    """A listing that notes which projects a resolution looked at."""

    def __init__(self, listing: Listing) -> None:
        self.listing = listing
        self.projects: set[str] = set()

    def candidates(self, project: str) -> tuple[Candidate, ...]:
        self.projects.add(str(canonicalize_name(project)))
        return self.listing.candidates(project)

    def metadata(self, file: IndexFile) -> bytes:
        return self.listing.metadata(file)


def _memo_key(
    roots: Sequence[StackCandidate],
    target: Target,
    options: FilterOptions,
    scope: str,
    wanted: UserWants | None = None,
) -> str | None:
    shas = [r.key for r in roots]
    if any(len(s) != 64 for s in shas):
        return None
    doc: dict[str, Any] = {"kind": "closure", "code": code_digest(__name__), "roots": sorted(shas),
                           "target": target.key(), "pre": options.pre, "scope": scope}  # fmt: skip
    if wanted is not None and (wanted.requirements or wanted.constraints):
        doc["wants"] = [sorted(map(str, wanted.requirements)), sorted(map(str, wanted.constraints))]
    if options.yanked:
        doc["yanked"] = True
    for kind, rules in (("constraints", options.constraints), ("overrides", options.overrides)):
        if rules:
            doc[kind] = [r.text for r in rules]
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _pin_to_json(p: Pin) -> dict[str, Any]:
    """A pin as stored: everything of its file a lock says (a warm lock is the cold one, byte for byte)."""
    f = p.candidate.file
    return {"filename": f.filename, "url": neutral(f.url), "sha256": f.sha256, "size": f.size,
            "index": neutral(f.index_url), "upload_time": f.upload_time, "why": p.why}  # fmt: skip


def _pin_from_json(d: dict[str, Any]) -> Pin:
    hashes = {"sha256": str(d["sha256"])} if d.get("sha256") else {}
    uploaded = d.get("upload_time")
    file = IndexFile(str(d["filename"]), concrete(str(d["url"])), hashes, size=d.get("size"),
                     index_url=concrete(str(d.get("index") or "")),
                     upload_time=str(uploaded) if uploaded else None)  # fmt: skip
    ((c,), _) = candidates_from_files([file])
    return Pin(c.name, c.version, c, why=str(d.get("why") or ""))


def resolve_closure(
    roots: Sequence[StackCandidate],
    listing: Listing,
    target: Target,
    options: FilterOptions,
    *,
    follow: Callable[[str], bool] | None = None,
    scope: str = "all",
    memo: AnalysisStore | None = None,
    roots_win: bool = False,
    wanted: UserWants | None = None,
) -> list[Pin]:
    """Every wheel the roots (and ``wanted``'s requirements, within its constraints) need beyond
    themselves, sorted by name (roots excluded); with ``follow``,
    only requirements on projects it accepts are followed (``scope`` names that choice). With
    ``roots_win`` a requirement on a root never rules it out (the roots are taken as given, as
    ``--override`` would; the caller judges such requirements itself).

    With ``memo`` (and a listing that can tell its pages' identity without reading them) an earlier
    answer is reused while every page it looked at is still the same page: a warm solve then parses
    no dependency's listing."""
    scoped = f"{scope}+roots" if roots_win else scope
    identity = getattr(listing, "identity", None)
    recording = _Recording(listing)

    def compute() -> list[Pin]:
        return _resolve(roots, recording, target, options, follow, roots_win, wanted or UserWants())

    if memo is None or identity is None:
        return compute()

    def still_same(doc: list[dict[str, Any]]) -> list[Pin] | None:
        """The pins stored, while every page they were resolved over is still the same page."""
        for entry in doc:
            pages = entry.get("pages")
            if isinstance(pages, dict) and all(identity(p) == tuple(ids) for p, ids in pages.items()):
                try:
                    return [_pin_from_json(d) for d in entry.get("pins", [])]
                except (KeyError, TypeError, ValueError, InvalidVersion):
                    return None
        return None

    def with_pages(pins: list[Pin]) -> list[dict[str, Any]] | None:
        seen = {p: identity(p) for p in sorted(recording.projects)}
        if any(ids is None for ids in seen.values()):
            return None  # a page it would ask the index for: nothing to tell the answer is still good by
        return [
            {
                "pages": {p: list(ids or ()) for p, ids in seen.items()},
                "pins": [_pin_to_json(p) for p in pins],
            }
        ]

    return memo.memoized(_memo_key(roots, target, options, scoped, wanted), compute, with_pages, still_same)


def _resolve(
    roots: Sequence[StackCandidate],
    listing: Listing,
    target: Target,
    options: FilterOptions,
    follow: Callable[[str], bool] | None,
    roots_win: bool = False,
    user: UserWants = UserWants(),
) -> list[Pin]:
    by_name = {canonicalize_name(str(r.name)): r for r in roots}
    named = [canonicalize_name(r.name) for r in user.requirements]
    adapter = _ClosureAdapter(
        by_name, listing, target, options, follow, roots_win, user.constraint_map(), named
    )
    wanted = [
        Req(n, frozenset(), SpecifierSet(), "the chosen set", root=r.filename) for n, r in by_name.items()
    ] + user.reqs()
    try:
        result = Resolver(adapter, BaseReporter()).resolve(wanted, max_rounds=MAX_ROUNDS)
    except ResolutionImpossible as exc:
        line = conflict_line(exc.causes)
        raise ClosureError(
            f"the chosen set's dependencies cannot be completed: {line}", _unwheeled(adapter, exc.causes)
        ) from None
    except ResolutionTooDeep:
        raise ClosureTooDeep(
            f"the chosen set's dependencies were not resolved within {MAX_ROUNDS:,} rounds (pip's limit)"
        ) from None
    pins = [
        replace(p, why=_why(result.criteria, p.name))
        for p in result.mapping.values()
        if not p.extras and p.name not in by_name
    ]
    return sorted(pins, key=lambda p: p.name)


def _unwheeled(adapter: _ClosureAdapter, causes: Iterable[Any]) -> dict[str, str]:
    """The projects of ``causes`` none of whose wheels for the target meets any requirement asked of it
    (antlr4-python3-runtime==4.9.*, whose 4.9 releases are sdists): not a conflict between requirements,
    a release pip builds from source. Each with one requirement that asks for it, in words."""
    by_name: dict[str, list[Any]] = {}
    for c in causes:
        by_name.setdefault(str(c.requirement.name), []).append(c)
    out: dict[str, str] = {}
    for name, reqs in by_name.items():
        if name in adapter.roots:
            continue
        wheels = adapter._wheels(canonicalize_name(name))
        if not any(
            r.requirement.specifier.contains(w.version, prereleases=True) for r in reqs for w in wheels
        ):
            last = reqs[-1].requirement  # the newest asker resolvelib tried, in words
            out[name] = last.why or f"{last.ident}{last.specifier}"
    return out


def conflict_line(causes: Iterable[Any]) -> str:
    """The requirements that clash, in words: each with who asked (``app 1.0 requires dep>=2``)."""
    whys = sorted({c.requirement.why or f"{c.requirement.ident}{c.requirement.specifier}" for c in causes})
    if len(whys) == 1:
        return f"no wheel for the target satisfies {whys[0]}"
    return " vs ".join(whys) if whys else "no candidates"


def _why(criteria: Mapping[str, Any], name: str) -> str:
    """The requirements that brought ``name`` into the closure, with or without extras, in words."""
    whys = [
        info.requirement.why
        for ident, criterion in criteria.items()
        if ident == name or ident.startswith(f"{name}[")
        for info in criterion.information
        if info.requirement.why
    ]
    return "; ".join(dict.fromkeys(whys))


def complete_install(
    wheels: Sequence[StackCandidate],
    listing: Listing,
    target: Target,
    options: FilterOptions,
    *,
    memo: AnalysisStore | None = None,
) -> tuple[list[StackCandidate], str | None]:
    """The dependency wheels that make ``wheels`` a whole install, or none and why that is impossible."""
    try:
        pins = resolve_closure(wheels, listing, target, options, memo=memo)
    except AbiprobeError as exc:
        return [], str(exc)
    return [StackCandidate("dependency", p.candidate, 0) for p in pins], None
