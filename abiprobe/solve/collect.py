"""The first stages of a solve: each role's candidates listed and prefiltered, the facts of the newest
few read (concurrently), and the groups built (a core wheel with its companions and the per-architecture
provider the target loads). What is read comes through the ports of :mod:`abiprobe.solve.ports`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from abiprobe.errors import AbiprobeError
from abiprobe.model.arch_ranking import ranked_arch_wheels
from abiprobe.model.candidate import Candidate, IndexFile
from abiprobe.model.cuda_variant import CudaVariant, declared_variant, infer_variant
from abiprobe.model.facts import WheelFacts, WheelInfo
from abiprobe.model.requirements import requires_dist_of
from abiprobe.model.stack import Stack
from abiprobe.model.target import Target
from abiprobe.solve.arch_wheels import ArchWheelChoice, choose_arch_wheel, named_tags
from abiprobe.solve.candidates import (
    Exclusion,
    FilterOptions,
    StackCandidate,
    matching_companions,
    prefilter,
    public_version,
    select_window,
)
from abiprobe.solve.matrix import Group, build_groups
from abiprobe.solve.ports import (
    FactsFor,
    IndexReader,
    MetadataFor,
    PageOutcome,
    Progress,
    RuntimeFactsFor,
    VariantFactsFor,
)
from abiprobe.solve.unread import UnreadWheel

# wheels whose facts are read at once: a cold read is CPU-bound (TLS, inflate, hashing), and reads
# overlap on two cores because zlib, hashlib and socket reads release the GIL
PREFETCH_WORKERS = 3


@dataclass
class Collector:
    """Lists projects and fetches facts, remembering index outcomes and problems along the way."""

    index: IndexReader
    facts_for: FactsFor
    target: Target
    metadata_for: MetadataFor  # METADATA where no PEP 658 file is offered
    runtime_facts_for: RuntimeFactsFor  # partial reads of runtime wheels
    progress: Progress
    variant_facts_for: VariantFactsFor  # stored facts, else its smallest library only
    outcomes: list[PageOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unread_wheels: list[UnreadWheel] = field(default_factory=list)  # the problems that are unread wheels
    _facts: dict[tuple[str, str], WheelInfo | None] = field(default_factory=dict)
    _errors: dict[tuple[str, str], str] = field(default_factory=dict)  # file -> why it could not be read
    _runtime: dict[tuple[str, str], WheelInfo | None] = field(default_factory=dict)
    # wheels listed with several hashes whose bytes match none of theirs: a finding, not a failed read
    unreadable_twins: dict[tuple[str, str], str] = field(default_factory=dict)
    _listings: dict[str, tuple[Candidate, ...]] = field(default_factory=dict)
    _declared: dict[tuple[str, str], CudaVariant] = field(default_factory=dict)
    asked: dict[str, tuple[PageOutcome, ...]] = field(default_factory=dict)

    def candidates(self, project: str) -> tuple[Candidate, ...]:
        name = str(canonicalize_name(project))
        if name not in self._listings:
            listing = self.index.list_project(name)
            self.outcomes.extend(listing.outcomes)
            self.asked[name] = tuple(listing.outcomes)
            self._listings[name] = listing.candidates
            self._skip_dead(listing.outcomes)
        return self._listings[name]

    def _skip_dead(self, outcomes: Sequence[PageOutcome]) -> None:
        """An index that could not be reached once is not asked again during this solve."""
        if self.index.offline:  # a page missing from the cache says nothing about the index's other pages
            return
        dead = {o.index for o in outcomes if o.status == "failed" and not o.from_cache}
        if not dead:
            return
        self.index = self.index.without(dead)

    def unverified_files(self) -> list[IndexFile]:
        """The listed files whose facts came from range reads: each solve asks the server whether it still
        serves the zip directory they were read through (``abiprobe.net.remote_wheel.trusted``)."""
        keys = {
            key
            for known in (self._facts, self._runtime)
            for key, info in known.items()
            if info is not None and not info.summary.verified
        }
        files = {(c.file.url, c.file.sha256 or ""): c.file for cs in self._listings.values() for c in cs}
        return [files[k] for k in sorted(keys) if k in files]

    def identity(self, project: str) -> tuple[str, ...] | None:
        """The identity of the pages a listing of ``project`` would be read from (see IndexReader)."""
        return self.index.page_identity(project)

    def metadata(self, file: IndexFile) -> bytes:
        """Core metadata: the index's PEP 658 file, else the METADATA read from the wheel itself."""
        if file.has_metadata:
            return self.index.fetch_metadata(file)
        return self.metadata_for(file)

    def declared_variant(self, sc: StackCandidate) -> CudaVariant:
        """The CUDA variant ``sc``'s local label and, where the index serves it (PEP 658), its metadata
        file declare, before its libraries are read; a metadata file that cannot be read leaves it to the
        wheel's own facts. Where they say nothing: what ``variant_facts_for`` gives (the stored facts, else
        the wheel's smallest library, read alone), taken only when it rules the wheel out. A major one
        library names other than the target's excludes the wheel whatever the others name
        (:meth:`CudaVariant.excludes`); one that fits says nothing of the rest. (The sonames of the
        library that matters are no cheaper: the dynamic section that lists them sits after the GPU code
        in a kernel library, so reading up to it reads nearly all of it.)"""
        key = _file_key(sc)
        if key not in self._declared:
            requires: tuple[str, ...] | None = None
            if sc.candidate.file.has_metadata:
                try:
                    requires = requires_dist_of(self.index.fetch_metadata(sc.candidate.file))
                except AbiprobeError:
                    requires = None
            said = declared_variant(sc.candidate, requires, self.target)
            if not said.majors and not said.cpu:
                said = self._probed_variant(sc, said)
            self._declared[key] = said
        return self._declared[key]

    def _probed_variant(self, sc: StackCandidate, said: CudaVariant) -> CudaVariant:
        key = _file_key(sc)
        info = self._facts.get(key)
        if info is None and not sc.candidate.file.duplicate:
            try:
                info = self.variant_facts_for(sc.candidate.file)
            except AbiprobeError:  # left to the read of the whole wheel, which says what went wrong
                return said
            if info is not None and not info.summary.partial:  # the whole wheel's facts, stored
                self._facts.setdefault(key, info)
        if info is None:
            return said
        probed = infer_variant(sc.candidate, info.summary, self.target)
        return probed if probed.excludes(self.target.cuda[0]) else said

    def declare(self, scs: Sequence[StackCandidate]) -> None:
        """:meth:`declared_variant` of several candidates at once (their metadata files, or their smallest
        libraries, fetched concurrently)."""
        todo = [sc for sc in scs if _file_key(sc) not in self._declared]
        with ThreadPoolExecutor(max(1, min(PREFETCH_WORKERS, len(todo)))) as pool:
            list(pool.map(self.declared_variant, todo))

    def facts(self, sc: StackCandidate) -> WheelInfo | None:
        key = _file_key(sc)
        if key not in self._facts:
            try:
                got = self.facts_for(sc.candidate.file)
                self._facts[key] = WheelInfo.of(got) if isinstance(got, WheelFacts) else got
            except AbiprobeError as exc:
                self._failed(sc, exc)
                self._facts[key] = None
        return self._facts[key]

    def _failed(self, sc: StackCandidate, exc: AbiprobeError) -> None:
        self._errors[_file_key(sc)] = str(exc)
        if sc.candidate.file.duplicate:
            self.unreadable_twins[_file_key(sc)] = str(exc)
        else:
            self.problems.append(f"{sc.filename}: {exc}")
            self.unread_wheels.append(UnreadWheel(sc.filename, sc.candidate.file.url, str(exc)))

    def unread_reason(self, sc: StackCandidate) -> str | None:
        """Why ``sc``'s bytes could not be read (None: read, or never asked for)."""
        return self._errors.get(_file_key(sc))

    def prefetch(self, scs: Sequence[StackCandidate], read: Callable[[str], bool] | None = None) -> None:
        """Facts of several wheels read concurrently (runtime wheels with ``read``); later calls of
        :meth:`facts` / :meth:`runtime_info` find them remembered. Problems are recorded as usual."""
        if read is None:
            todo = [sc for sc in scs if _file_key(sc) not in self._facts]
        else:
            todo = [sc for sc in scs if self._runtime_lacks(sc, read)]
        todo = list({_file_key(sc): sc for sc in todo}.values())
        if len(todo) < 2:
            return
        with self.progress(len(todo)) as work, ThreadPoolExecutor(min(PREFETCH_WORKERS, len(todo))) as pool:

            def one(sc: StackCandidate) -> None:
                work.started(sc.filename)
                try:
                    self.facts(sc) if read is None else self.runtime_info(sc, read)
                finally:
                    work.finished(sc.filename)

            list(pool.map(one, todo))

    def _runtime_lacks(self, sc: StackCandidate, read: Callable[[str], bool]) -> bool:
        """Whether ``sc`` was never read as a runtime wheel, or was read without members ``read`` accepts."""
        key = _file_key(sc)
        if key not in self._runtime:
            return True
        have = self._runtime[key]
        return have is not None and any(read(p) for p in have.summary.unread)

    def runtime_info(self, sc: StackCandidate, read: Callable[[str], bool]) -> WheelInfo | None:
        """A runtime wheel's facts with every binary ``read`` accepts read (others may stay unread)."""
        key = _file_key(sc)
        if not self._runtime_lacks(sc, read):
            return self._runtime[key]
        try:
            self._runtime[key] = self.runtime_facts_for(sc.candidate.file, read)
        except AbiprobeError as exc:
            self._failed(sc, exc)
            self._runtime[key] = None
        return self._runtime[key]

    def ledger(self) -> ReadLedger:
        """What the reads met so far, as a value: a later stage is handed this, not the reader."""
        return ReadLedger(
            outcomes=tuple(self.outcomes),
            asked=dict(self.asked),
            problems=tuple(dict.fromkeys(self.problems)),
            unread_wheels=tuple(dict.fromkeys(self.unread_wheels)),
            unreadable_twins=dict(self.unreadable_twins),
            range_read=tuple(self.unverified_files()),
            listed=tuple(sorted(self._listings)),
        )

    def stack_needed(self) -> set[str]:
        """Every soname a stack candidate fetched so far needs."""
        return {n for info in self._facts.values() if info is not None for n in info.summary.needed}


def _file_key(sc: StackCandidate) -> tuple[str, str]:
    """A listed file: its URL and listed sha256 (a page may list one URL twice with other hashes)."""
    return sc.candidate.file.url, sc.candidate.file.sha256 or ""


@dataclass(frozen=True)
class ReadLedger:
    """What a solve's reads met up to one moment: each index's answers (all, and by project), the
    problems, the wheels that could not be read (and the twins whose bytes match no listing), the files
    whose facts came from range reads, and every project listed."""

    outcomes: tuple[PageOutcome, ...]
    asked: Mapping[str, tuple[PageOutcome, ...]]
    problems: tuple[str, ...]
    unread_wheels: tuple[UnreadWheel, ...]
    unreadable_twins: Mapping[tuple[str, str], str]
    range_read: tuple[IndexFile, ...]
    listed: tuple[str, ...]


@dataclass(frozen=True)
class Collected:
    """The first stage's value: each role's groups, the candidates left out and why, and why each
    wheel of the groups that could not be read could not (by listed file)."""

    groups: Mapping[str, tuple[Group, ...]]
    excluded: tuple[Exclusion, ...]
    unread_reasons: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def unread(self, group: Group) -> list[tuple[str, str]]:
        """(label, reason) of each wheel of ``group`` whose facts are missing."""
        return [
            (w.label(), self.unread_reasons.get(_file_key(w)) or "no facts were read")
            for w in group.wheels
            if w.info is None
        ]


def collect(stack: Stack, collector: Collector, options: FilterOptions, window: int | None) -> Collected:
    """Each role's ``window`` newest candidates (all its names together), their version-matched
    companions, and for a shim companion the per-architecture provider the target loads."""
    target = collector.target
    excluded: list[Exclusion] = []
    cores: dict[str, list[StackCandidate]] = {}
    companions: dict[str, dict[str, list[StackCandidate]]] = {}
    listed_companions: set[str] = set()
    by_role: dict[str, list[StackCandidate]] = {}
    for member in stack.members:
        ordered: list[StackCandidate] = []
        for name in member.names:
            raw = collector.candidates(name)
            kept, dropped = prefilter(member.role, raw, member.specifier, target, options)
            ordered += kept
            excluded += dropped
        ordered.sort(key=lambda s: s.version, reverse=True)
        by_role[member.role] = ordered
    # what each of the newest few of every role (of every release without a window) declares, asked at
    # once; those it does not rule out are read at once; select_window reads on only where one is excluded
    collector.declare([sc for ordered in by_role.values() for sc in ordered[:window]])
    first = [sc for ordered in by_role.values() for sc in _first_fitting(ordered, collector, window)]
    collector.prefetch(first)
    arch_found: dict[str, dict[str, list[StackCandidate]]] = {}
    for member in stack.members:
        ordered = by_role[member.role]
        kept, dropped = select_window(
            member.role, ordered, collector.facts, target, window, collector.declared_variant
        )
        cores[member.role] = kept
        excluded += dropped
        wanted = {public_version(c.version) for c in kept}
        for comp in member.companions:
            found, dropped = _companion_candidates(member.role, comp.name, wanted, collector, options)
            if collector.candidates(comp.name):
                listed_companions.add(comp.name)
            companions.setdefault(member.role, {})[comp.name] = found
            excluded += dropped
            if comp.arch_wheels is not None:
                versions = {public_version(c.version) for c in found}
                # the shims' Requires-Dist names every provider of their release (a legacy shim none)
                tags = {t for c in found for t in named_tags(c, comp.arch_wheels)}
                for tag in sorted(_reachable_tags(tags, target)):
                    arch_name = str(comp.arch_wheels.name(tag))
                    got, dropped = _companion_candidates(member.role, arch_name, versions, collector, options)
                    arch_found.setdefault(comp.name, {})[tag] = got
                    excluded += dropped
    groups = build_groups(cores, companions, stack, matching_companions, listed_companions)
    groups = _with_arch_wheels(groups, stack, arch_found, target, _asked(collector))
    required = {c.name for m in stack.members for c in m.companions if c.required}
    final: dict[str, tuple[Group, ...]] = {}
    for role, gs in groups.items():
        keep = []
        for g in gs:
            lacking = [n for n in g.missing if n in required]
            if lacking:
                reason = f"required companion {', '.join(lacking)} {g.core.version.public} not found"
                excluded.append(
                    Exclusion(
                        role, str(g.core.name), str(g.core.version), g.core.filename, "metadata", reason
                    )
                )
                continue
            keep.append(g)
        final[role] = tuple(keep)
    return Collected(final, tuple(excluded), dict(collector._errors))


def _first_fitting(
    ordered: Sequence[StackCandidate], collector: Collector, window: int | None
) -> list[StackCandidate]:
    """The newest ``window`` candidates (all when None) whose declared CUDA variant does not exclude them."""
    major = collector.target.cuda[0]
    out: list[StackCandidate] = []
    for sc in ordered:
        if window is not None and len(out) >= window:
            break
        if not collector.declared_variant(sc).excludes(major):
            out.append(sc)
    return out


def _companion_candidates(
    role: str, name: str, wanted: set[Version], collector: Collector, options: FilterOptions
) -> tuple[list[StackCandidate], list[Exclusion]]:
    """Every listed version of a companion project whose public version is one of ``wanted``, read."""
    target = collector.target
    listed, dropped = prefilter(role, collector.candidates(name), SpecifierSet(), target, options)
    excluded = [d for d in dropped if d.check != "tags"]
    listed = [c for c in listed if public_version(c.version) in wanted]
    collector.prefetch(listed)
    found, dropped = select_window(role, listed, collector.facts, target, None)
    return found, excluded + dropped


def _reachable_tags(tags: set[str], target: Target) -> list[str]:
    """Provider tags whose code could run on the target (all of them when the target has no GPU arch)."""
    if target.arch is None:
        return sorted(tags)
    return [r.tag for r in ranked_arch_wheels(tags, target.arch)]


def _asked(collector: Collector) -> str:
    return ", ".join(s.label for s in collector.index.sources) or "no index"


def _with_arch_wheels(
    groups: Mapping[str, tuple[Group, ...]],
    stack: Stack,
    found: Mapping[str, Mapping[str, Sequence[StackCandidate]]],
    target: Target,
    where: str,
) -> dict[str, tuple[Group, ...]]:
    """Each group's shim companions get the provider the target loads (added to the companions)."""
    out: dict[str, tuple[Group, ...]] = {}
    for member in stack.members:
        shims = {c.name: c.arch_wheels for c in member.companions if c.arch_wheels is not None}
        updated = []
        for g in groups.get(member.role, ()):
            extra: list[StackCandidate] = []
            choices: list[ArchWheelChoice] = []
            for comp in g.companions:
                spec = shims.get(comp.name)
                if spec is None:
                    continue
                choice, wheel = choose_arch_wheel(comp, spec, found.get(comp.name, {}), target.arch, where)
                if choice is not None:
                    choices.append(choice)
                if wheel is not None:
                    extra.append(wheel)
            updated.append(replace(g, companions=(*g.companions, *extra), arch_wheels=tuple(choices)))
        out[member.role] = tuple(updated)
    return out
