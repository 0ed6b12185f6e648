"""Which listed wheels are candidates for a target: tags, Python, yanked, pre-releases, CUDA variant.

Pure: index ``Candidate`` objects (and, once fetched, their ``WheelFacts``) in, kept candidates and
the reasons for every exclusion out. The CUDA variant is :mod:`abiprobe.model.cuda_variant`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from abiprobe.model.candidate import Candidate, parse_upload_time
from abiprobe.model.cuda_variant import CudaVariant, infer_variant, variant_from_label
from abiprobe.model.facts import WheelInfo, WheelSummary
from abiprobe.model.target import Target
from abiprobe.solve.install_rules import InstallRule


@dataclass(frozen=True)
class StackCandidate:
    """A wheel kept for a stack role, with its tag rank and, once known, its facts and CUDA variant.

    ``summary`` is what choosing needs; the full facts are loaded, on first use only, through the solve's
    ``abiprobe.solve.ports.FullFacts`` port.
    """

    role: str
    candidate: Candidate
    tag_rank: int
    info: WheelInfo | None = field(default=None, compare=False, hash=False)
    variant: CudaVariant = field(default_factory=CudaVariant, compare=False, hash=False)

    @property
    def summary(self) -> WheelSummary | None:
        return self.info.summary if self.info is not None else None

    @property
    def name(self) -> NormalizedName:
        return self.candidate.name

    @property
    def version(self) -> Version:
        return self.candidate.version

    @property
    def filename(self) -> str:
        return self.candidate.file.filename

    @property
    def key(self) -> str:
        """sha256 of the wheel (from the index, else the facts), else its filename."""
        sha = self.candidate.file.sha256 or (self.info.sha256 if self.info else None)
        return sha or self.filename

    def label(self) -> str:
        return f"{self.name} {self.version}"

    @property
    def twin_mark(self) -> str:
        """`` (sha256 1c8b5a36…)`` for a filename listed with several hashes, else empty: ids stay unique."""
        if not self.candidate.file.duplicate:
            return ""
        return f" (sha256 {(self.candidate.file.sha256 or '?')[:12]})"


@dataclass(frozen=True)
class Exclusion:
    """A listed wheel that is not a candidate, and why (``check`` is a verdict check name)."""

    role: str
    name: str
    version: str
    filename: str
    check: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {
            "role": self.role,
            "name": self.name,
            "version": self.version,
            "filename": self.filename,
            "check": self.check,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class FilterOptions:
    """Which listed files may be candidates: pre-releases, yanked files, and files uploaded after a moment
    (``exclude_newer``, as uv's option: the index's upload time decides; it admits stack wheels only, see
    :func:`prefilter`). Made once per solve from the command line and passed down as it is."""

    pre: bool = False
    yanked: bool = False
    exclude_newer: datetime | None = None
    constraints: tuple[InstallRule, ...] = ()  # the installer's (abiprobe.solve.install_rules)
    overrides: tuple[InstallRule, ...] = ()

    def bounds(self, name: str) -> tuple[InstallRule, ...]:
        """The installer's constraints and overrides on ``name``."""
        wanted = canonicalize_name(name)
        return tuple(r for r in (*self.constraints, *self.overrides) if r.name == wanted)

    def override_of(self, name: str) -> InstallRule | None:
        wanted = canonicalize_name(name)
        return next((r for r in self.overrides if r.name == wanted), None)


def prefilter(
    role: str,
    candidates: Iterable[Candidate],
    specifier: SpecifierSet,
    target: Target,
    options: FilterOptions,
    *,
    explain: bool = True,
    stack_wheel: bool = True,
) -> tuple[list[StackCandidate], list[Exclusion]]:
    """Cheap checks (no facts): tags, Requires-Python, yanked, pre-release, specifier, CUDA label.

    Keeps the best-tagged wheel of each version, newest version first; a filename listed with several
    hashes (``duplicate``) keeps each of them, to be judged by its own bytes. Without ``explain`` no
    exclusions are written (a dependency's page lists thousands of other platforms' files). Upload
    times (``options.exclude_newer``) are judged for a ``stack_wheel`` only: the rest of an install is
    resolved as the indexes list it now.
    """
    rank = {tag: i for i, tag in enumerate(target.supported_tags())}
    best: dict[tuple[Version, str], StackCandidate] = {}
    excluded: list[Exclusion] = []

    def drop(c: Candidate, check: str, reason: str) -> None:
        excluded.append(Exclusion(role, str(c.name), str(c.version), c.file.filename, check, reason))

    for c in candidates:
        tag_rank = min((rank[t] for t in c.tags if t in rank), default=None)
        if tag_rank is None:
            if not explain:
                continue
            where = f"{target.python_tag} {target.platform}"
            drop(c, "tags", f"tags {c.tags_summary()} do not install on {where}")
            continue
        why = _cheap_reason(c, specifier, target, options, stack_wheel)
        if why is not None:
            drop(c, *why)
            continue
        key = (c.version, (c.file.sha256 or c.file.url) if c.file.duplicate else "")
        kept = best.get(key)
        if kept is None or tag_rank < kept.tag_rank:
            best[key] = StackCandidate(role=role, candidate=c, tag_rank=tag_rank)
    ordered = sorted(best.values(), key=lambda s: s.version, reverse=True)
    return ordered, excluded


def _cheap_reason(
    c: Candidate, specifier: SpecifierSet, target: Target, options: FilterOptions, stack_wheel: bool
) -> tuple[str, str] | None:
    if c.file.is_yanked and not options.yanked:
        reason = c.file.yanked_reason
        return "metadata", "yanked" + (f": {reason}" if reason else "")
    if options.exclude_newer is not None and stack_wheel:
        uploaded = parse_upload_time(c.file.upload_time)
        if uploaded is None:
            return "metadata", "the index gives no upload time, so --exclude-newer cannot admit it"
        if uploaded > options.exclude_newer:
            return "metadata", f"uploaded {c.file.upload_time}, after --exclude-newer"
    if c.version.is_prerelease and not options.pre and not specifier.prereleases:
        return "metadata", "pre-release (use --pre)"
    if specifier and not specifier.contains(c.version, prereleases=True):
        return "requires", f"outside the stack's bound {specifier}"
    for rule in options.bounds(c.name):
        if not rule.admits(c.version):
            return "requires", f"outside the installer's {rule.describe()}"
    if c.file.requires_python and not _python_ok(c.file.requires_python, target):
        return "requires", f"Requires-Python {c.file.requires_python} excludes Python {target.python_tag}"
    label = variant_from_label(c.version)
    if not label.fits(target.cuda[0]):
        return "metadata", f"not a CUDA {target.cuda[0]} candidate: {label.describe()}"
    return None


def _python_ok(requires_python: str, target: Target) -> bool:
    try:
        spec = SpecifierSet(requires_python)
        return spec.contains(Version(f"{target.python[0]}.{target.python[1]}.0"), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


def select_window(
    role: str,
    ordered: Sequence[StackCandidate],
    facts_for: Callable[[StackCandidate], WheelInfo | None],
    target: Target,
    window: int | None,
    declared: Callable[[StackCandidate], CudaVariant] | None = None,
) -> tuple[list[StackCandidate], list[Exclusion]]:
    """Walk newest first, fetching facts, until ``window`` candidates fit the target's CUDA major (all of
    them when ``window`` is None). One whose ``declared`` variant (label, metadata file, smallest library)
    already names another major is excluded without its facts."""
    kept: list[StackCandidate] = []
    excluded: list[Exclusion] = []

    def exclude(sc: StackCandidate, variant: CudaVariant) -> None:
        reason = f"not a CUDA {target.cuda[0]} candidate: {variant.describe()}"
        excluded.append(Exclusion(role, str(sc.name), str(sc.version), sc.filename, "sonames", reason))

    for sc in ordered:
        if window is not None and len(kept) >= window:
            break
        said = declared(sc) if declared is not None else None
        if said is not None and said.excludes(target.cuda[0]):
            exclude(sc, said)
            continue
        info = facts_for(sc)
        variant = infer_variant(sc.candidate, info.summary if info else None, target)
        if not variant.fits(target.cuda[0]):
            exclude(sc, variant)
            continue
        kept.append(StackCandidate(sc.role, sc.candidate, sc.tag_rank, info=info, variant=variant))
    return kept, excluded


def public_version(version: Version) -> Version:
    return Version(version.public)


def matching_companions(
    core_version: Version, companions: Mapping[str, Sequence[StackCandidate]]
) -> dict[str, StackCandidate | None]:
    """For each companion project, its newest candidate whose public version equals the core's."""
    wanted = public_version(core_version)
    out: dict[str, StackCandidate | None] = {}
    for name, cands in companions.items():
        out[name] = next((c for c in cands if public_version(c.version) == wanted), None)
    return out
