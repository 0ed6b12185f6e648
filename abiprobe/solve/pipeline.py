"""One solve: list candidates, fetch facts, build the matrix, resolve, explain near misses, and resolve
the whole install of the sets the lock and the probe jobs need.

Everything it reads comes in through the ports of :mod:`abiprobe.solve.ports` (``SolveReads``: the
index, the facts readers, the verdict store, progress), wired in by ``abiprobe.commands``; tests drive it
with a local index server and the bench counts bytes. It returns one value (``SolveResult``): nothing
it read through stays live after it returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from abiprobe.analyze.profiles import Profile
from abiprobe.errors import AbiprobeError
from abiprobe.model.candidate import NOT_CACHED, Candidate, IndexFile
from abiprobe.model.facts import WheelFacts, WheelInfo, WheelSummary
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.target import Target
from abiprobe.model.verdict import STATUS_ORDER
from abiprobe.solve.arch_wheels import ArchWheelChoice, choose_arch_wheel, named_tags, ranked_arch_wheels
from abiprobe.solve.candidates import (
    Exclusion,
    FilterOptions,
    StackCandidate,
    infer_variant,
    matching_companions,
    prefilter,
    public_version,
    select_window,
)
from abiprobe.solve.closure import complete_install, resolve_closure
from abiprobe.solve.evaluate import StaticEvaluator
from abiprobe.solve.matrix import Group, Matrix, MatrixBuilder, build_groups
from abiprobe.solve.override import override_set
from abiprobe.solve.ports import (
    AnalysisStore,
    FactsFor,
    IndexReader,
    MetadataFor,
    PageOutcome,
    Progress,
    RuntimeFactsFor,
    SolveReads,
    no_progress,
)
from abiprobe.solve.reach import Reach
from abiprobe.solve.resolver import build_picks, resolve, rules_out
from abiprobe.solve.result import CellSelection, EmptyRole, IndexStatus, NearMiss, SetInstall, SolveResult
from abiprobe.solve.stack import Stack
from abiprobe.solve.twins import twin_report

# wheels whose facts are read at once: a cold read is CPU-bound (TLS, inflate, hashing), and reads
# overlap on two cores because zlib, hashlib and socket reads release the GIL
PREFETCH_WORKERS = 3
_RUNTIME_PREFIXES = ("nvidia-", "cuda-toolkit")


@dataclass
class Collector:
    """Lists projects and fetches facts, remembering index outcomes and problems along the way."""

    index: IndexReader
    facts_for: FactsFor
    target: Target
    metadata_for: MetadataFor | None = None  # METADATA where no PEP 658 file is offered
    runtime_facts_for: RuntimeFactsFor | None = None  # partial reads of runtime wheels; else facts_for
    progress: Progress = no_progress
    outcomes: list[PageOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _facts: dict[tuple[str, str], WheelInfo | None] = field(default_factory=dict)
    _errors: dict[tuple[str, str], str] = field(default_factory=dict)  # file -> why it could not be read
    _runtime: dict[tuple[str, str], WheelInfo | None] = field(default_factory=dict)
    # wheels listed with several hashes whose bytes match none of theirs: a finding, not a failed read
    unreadable_twins: dict[tuple[str, str], str] = field(default_factory=dict)
    _listings: dict[str, tuple[Candidate, ...]] = field(default_factory=dict)
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
        if self.metadata_for is not None:
            return self.metadata_for(file)
        got = self.facts_for(file)
        meta = (got.summary if isinstance(got, WheelInfo) else got.summary()).metadata
        lines = ["Metadata-Version: 2.1", f"Name: {meta.name}", f"Version: {meta.version}"]
        lines += [f"Requires-Dist: {r}" for r in meta.requires_dist]
        return ("\n".join(lines) + "\n").encode()

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

    def unread_reason(self, sc: StackCandidate) -> str | None:
        """Why ``sc``'s bytes could not be read (None: read, or never asked for)."""
        return self._errors.get(_file_key(sc))

    def unread(self, group: Group) -> list[tuple[str, str]]:
        """(label, reason) of each wheel of ``group`` whose facts are missing."""
        out = []
        for w in group.wheels:
            if w.info is None:
                out.append((w.label(), self.unread_reason(w) or "no facts were read"))
        return out

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
        if self.runtime_facts_for is None:
            return self.facts(sc)
        key = _file_key(sc)
        if not self._runtime_lacks(sc, read):
            return self._runtime[key]
        try:
            self._runtime[key] = self.runtime_facts_for(sc.candidate.file, read)
        except AbiprobeError as exc:
            self._failed(sc, exc)
            self._runtime[key] = None
        return self._runtime[key]

    def stack_needed(self) -> set[str]:
        """Every soname a stack candidate fetched so far needs."""
        return {n for info in self._facts.values() if info is not None for n in info.summary.needed}


def _file_key(sc: StackCandidate) -> tuple[str, str]:
    """A listed file: its URL and listed sha256 (a page may list one URL twice with other hashes)."""
    return sc.candidate.file.url, sc.candidate.file.sha256 or ""


@dataclass(frozen=True)
class Collected:
    groups: Mapping[str, tuple[Group, ...]]
    excluded: tuple[Exclusion, ...]


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
    # the newest few of every role at once; select_window then reads on only where one is excluded
    collector.prefetch([sc for ordered in by_role.values() for sc in ordered[:window]])
    arch_found: dict[str, dict[str, list[StackCandidate]]] = {}
    for member in stack.members:
        ordered = by_role[member.role]
        kept, dropped = select_window(member.role, ordered, collector.facts, target, window)
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
    return Collected(final, tuple(excluded))


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


class RuntimeWheels:
    """The nvidia wheels a base (torch) wheel pins, found on the indexes, with their facts.

    Choosing them needs summaries only; their full facts are loaded when an analysis really runs. Of each
    wheel only the libraries the loader can reach are read: those torch preloads and those whose file
    name some stack candidate or read library needs (DT_NEEDED), to a fixed point. cuDNN's dlopen'd
    engines (a gigabyte) stay unread: no static verdict looks at them.
    """

    def __init__(self, collector: Collector, options: FilterOptions, store: AnalysisStore | None) -> None:
        self.collector = collector
        self.options = options
        self.store = store
        self._picked: dict[str, StackCandidate | None] = {}
        self._chosen: dict[str, tuple[StackCandidate, ...]] = {}
        self._unread: dict[str, tuple[tuple[str, str], ...]] = {}
        # sonames needed: every stack candidate's (all collected before any runtime wheel is read), then
        # those of the runtime libraries read
        self._reach = Reach(collector, collector.stack_needed)

    def _info(self, sc: StackCandidate) -> WheelInfo | None:
        return self._reach.info(sc)

    def _settled(self, chosen: list[StackCandidate]) -> list[StackCandidate]:
        """Read what the libraries read so far need, until nothing more is reached."""
        return self._reach.settle(chosen)

    def __call__(self, base: Group) -> Sequence[WheelFacts]:
        """Full facts of the runtime wheels (loads them)."""
        return tuple(f for sc in self.wheels(base) if (f := sc.facts) is not None)

    def unread(self, base: Group) -> Sequence[tuple[str, str]]:
        """(label, reason) of the runtime wheels an install of ``base`` gets that could not be read."""
        self.wheels(base)
        return self._unread.get(base.key, ())

    def summaries(self, base: Group) -> Sequence[WheelSummary]:
        return tuple(s for sc in self.wheels(base) if (s := sc.summary) is not None)

    def wheels(self, base: Group) -> list[StackCandidate]:
        """The runtime wheels an install of ``base`` gets: resolved over every pin on them in the runtime
        wheels' own dependency tree (as an installer would); one requirement at a time when that fails."""
        if base.key not in self._chosen:
            chosen = self._resolved(base)
            if chosen is None:
                found: dict[str, StackCandidate] = {}
                unread: list[tuple[str, str]] = []
                for w in base.wheels:
                    if w.summary is not None:
                        self._expand(w.summary, frozenset(), found, unread, depth=0)
                chosen = [found[k] for k in sorted(found)]
                self._unread[base.key] = tuple(unread)
            self._chosen[base.key] = tuple(self._settled(chosen))
        return list(self._chosen[base.key])

    def _resolved(self, base: Group) -> list[StackCandidate] | None:
        roots = [w for w in base.wheels if w.summary is not None]
        target = self.collector.target
        try:
            pins = resolve_closure(
                roots,
                self.collector,
                target,
                self.options,
                follow=lambda n: n.startswith(_RUNTIME_PREFIXES),
                scope="runtime",
                memo=self.store,
            )
        except AbiprobeError as exc:
            self.collector.problems.append(f"runtime wheels of {base.id} picked one pin at a time: {exc}")
            return None
        out = []
        bare_pins = [StackCandidate("runtime", pin.candidate, 0) for pin in pins]
        self._reach.needed  # noqa: B018 - made before the readers start, which only read it
        self.collector.prefetch(bare_pins, self._reach)
        unread = []
        for bare in bare_pins:  # all runtime projects: nothing else was followed
            info = self._info(bare)
            if info is not None:
                variant = infer_variant(bare.candidate, info.summary, target)
                out.append(StackCandidate("runtime", bare.candidate, 0, info=info, variant=variant))
            else:
                unread.append((bare.label(), self.collector.unread_reason(bare) or "no facts were read"))
        self._unread[base.key] = tuple(unread)
        return out

    def _expand(
        self,
        facts: WheelSummary,
        extras: frozenset[str],
        found: dict[str, StackCandidate],
        unread: list[tuple[str, str]],
        depth: int,
    ) -> None:
        target = self.collector.target
        for req in _requirements_with_extras(facts.metadata.requires_dist, target, extras):
            name = canonicalize_name(req.name)
            if not name.startswith(_RUNTIME_PREFIXES) or name in found or depth > 3:
                continue
            sc = self._pick(req)
            if sc is not None and sc.summary is None:
                unread.append((sc.label(), self.collector.unread_reason(sc) or "no facts were read"))
            if sc is None or sc.summary is None:
                continue
            found[name] = sc
            self._expand(sc.summary, frozenset(req.extras), found, unread, depth + 1)

    def _pick(self, req: Requirement) -> StackCandidate | None:
        key = f"{canonicalize_name(req.name)}{req.specifier}"
        if key not in self._picked:
            target = self.collector.target
            every_version = self.collector.candidates(req.name)
            listed, _ = prefilter("runtime", every_version, req.specifier, target, self.options)
            kept, _ = select_window("runtime", listed, self._info, target, 1)
            self._picked[key] = kept[0] if kept else None
        return self._picked[key]


def _requirements_with_extras(
    requires_dist: Sequence[str], target: Target, extras: frozenset[str]
) -> list[Requirement]:
    base = applicable_requirements(requires_dist, target)
    return [*base, *(applicable_requirements(requires_dist, target, extras) if extras else ())]


def index_statuses(
    outcomes: Sequence[PageOutcome], roots: Mapping[str, str] | None = None
) -> tuple[IndexStatus, ...]:
    """One line per index over the whole solve: answered when some page came back (live or from the
    cache, whose oldest fetch time is kept), what failed, and which pages an offline run lacked."""
    by_index: dict[str, list[PageOutcome]] = {}
    for o in outcomes:
        by_index.setdefault(o.index, []).append(o)
    out = []
    for index, seen in by_index.items():
        url = (roots or {}).get(index, seen[0].url)
        uncached = tuple(dict.fromkeys(o.url for o in seen if o.status == "failed" and o.error == NOT_CACHED))
        failed = [o for o in seen if o.status == "failed" and o.error != NOT_CACHED]
        cached = [o.fetched_at for o in seen if o.from_cache and o.fetched_at is not None]
        answered = any(o.status != "failed" or o.from_cache for o in seen)
        error = failed[0].error if failed else (None if answered or not uncached else NOT_CACHED)
        oldest = min(cached) if cached else None
        out.append(IndexStatus(index, url, answered, error, bool(cached), oldest, uncached))
    return tuple(out)


def near_misses(
    matrix: Matrix, builder: MatrixBuilder, chosen: Mapping[str, str] | None, excluded: Sequence[Exclusion]
) -> tuple[NearMiss, ...]:
    """Why each candidate newer than the chosen one (or the newest, when none was chosen) lost."""
    out: list[NearMiss] = []
    roles = matrix.stack.roles
    for i, role in enumerate(roles):
        groups = matrix.groups.get(role, ())
        if chosen is None:
            if groups:
                best = min(
                    (c for c in matrix.cells if groups[0].id in c.members),
                    key=lambda c: STATUS_ORDER[c.status],
                    default=None,
                )
                if best is not None:
                    out.append(NearMiss(role, groups[0].id, best.explanation))
            continue
        mine = chosen.get(role)
        chosen_version = next((g.core.version for g in groups if g.id == mine), None)
        for g in groups:
            if g.id == mine:
                break
            reasons = []
            status, why = builder.alone(g)
            if rules_out(status):
                reasons.append(why)
            for j, other_role in enumerate(roles):
                other_id = chosen.get(other_role)
                if other_role == role or other_id is None:
                    continue
                other = matrix.group(other_role, other_id)
                status, why = builder.together(other, g) if j < i else builder.together(g, other)
                if rules_out(status):
                    reasons.append(f"with {other.id}: {why}")
            out.append(NearMiss(role, g.id, "; ".join(reasons) or "not preferred by the resolver"))
        for e in excluded:
            if e.check == "tags" or e.role != role or chosen_version is None or e.reason.startswith("pre-"):
                continue
            if public_version(Version(e.version)) > public_version(chosen_version):
                out.append(NearMiss(role, f"{e.name}=={e.version}", e.reason))
    return tuple(dict.fromkeys(out))


def empty_roles(
    stack: Stack, groups: Mapping[str, Sequence[Group]], collector: Collector, labels: Mapping[str, str]
) -> tuple[EmptyRole, ...]:
    """Every role without a single candidate, with the indexes asked for its names (each by its URL)."""
    out = []
    for m in stack.members:
        if groups.get(m.role):
            continue
        outcomes = [o for n in m.names for o in collector.asked.get(str(n), ())]
        asked = tuple(dict.fromkeys(labels.get(o.index, o.index) for o in outcomes))
        out.append(EmptyRole(m.role, tuple(map(str, m.names)), asked, sum(o.candidates for o in outcomes)))
    return tuple(out)


def install_sets(matrix: Matrix, chosen: Sequence[str] | None, cells: CellSelection) -> list[tuple[str, ...]]:
    """The sets whose whole install is resolved: the chosen one (the lock's), and the cells probe jobs
    may be made for (``cells``: those whose members are all chosen, every passing one, or all)."""
    out = [tuple(chosen)] if chosen is not None else []
    if cells == "all":
        out += [c.members for c in matrix.cells]
    elif cells == "ok":
        out += [c.members for c in matrix.cells if c.status == "ok"]
    elif chosen is not None:
        out += [c.members for c in matrix.cells if set(c.members) <= set(chosen)][:1]
    return list(dict.fromkeys(out))


def _installs(
    matrix: Matrix,
    sets: Sequence[tuple[str, ...]],
    collector: Collector,
    runtime: RuntimeWheels | None,
    options: FilterOptions,
    store: AnalysisStore | None,
) -> dict[tuple[str, ...], SetInstall]:
    """Each set's stack wheels, the runtime wheels its base pins, and the rest of its install (without
    ``runtime``: the stack wheels alone)."""
    roles = {g.id: g for gs in matrix.groups.values() for g in gs}
    completed: dict[tuple[str, ...], tuple[list[StackCandidate], str | None]] = {}
    out: dict[tuple[str, ...], SetInstall] = {}
    for members in sets:
        groups = [roles[m] for m in members]
        stack_wheels = tuple(w for g in groups for w in g.wheels)
        if runtime is None:
            out[members] = SetInstall(stack_wheels)
            continue
        names = {w.filename for w in stack_wheels}
        pinned = tuple(w for w in runtime.wheels(groups[0]) if w.filename not in names)
        roots = [*stack_wheels, *pinned]
        key = tuple(sorted(w.filename for w in roots))
        if key not in completed:
            completed[key] = complete_install(roots, collector, matrix.target, options, memo=store)
        rest, problem = completed[key]
        have = names | {w.filename for w in pinned}
        note = f"incomplete: {problem}" if problem else ""
        added = tuple(w for w in rest if w.filename not in have)
        out[members] = SetInstall(stack_wheels, pinned, added, note)
    return out


def solve(
    stack: Stack,
    target: Target,
    profile: Profile,
    reads: SolveReads,
    options: FilterOptions,
    *,
    window: int | None = 3,
    runtime: bool = True,
    installs: CellSelection = "chosen",
) -> SolveResult:
    """Collect, build the matrix from pairwise analyses, resolve, explain what lost, and resolve the
    whole install of the chosen set (and of the cells ``installs`` selects for probe jobs)."""
    collector = Collector(
        reads.index, reads.facts_for, target, reads.metadata_for, reads.runtime_facts_for, reads.progress
    )
    collected = collect(stack, collector, options, window)
    runtime_wheels = RuntimeWheels(collector, options, reads.store)
    torch_rows = [g.core for g in collected.groups.get(stack.roles[0], ())]
    if runtime:
        evaluator = StaticEvaluator(
            target,
            profile,
            runtime_wheels,
            store=reads.store,
            runtime_keys=runtime_wheels.summaries,
            torch_candidates=torch_rows,
            unread=collector.unread,
            runtime_unread=runtime_wheels.unread,
        )
    else:
        evaluator = StaticEvaluator(
            target,
            profile,
            lambda _g: (),
            store=reads.store,
            torch_candidates=torch_rows,
            unread=collector.unread,
        )
    builder = MatrixBuilder(stack, target, evaluator)
    matrix = builder.build(collected.groups)
    picks = build_picks(stack, matrix.groups, target, builder)
    resolution = resolve(stack, picks, target)
    misses = near_misses(matrix, builder, resolution.chosen, collected.excluded)
    matrix.stats.analyses_run = evaluator.analyses_run
    matrix.stats.analyses_stored = evaluator.analyses_stored
    override = override_set(matrix, builder, resolution)
    labels = reads.index_urls
    # what the indexes answered for the matrix (the rest of an install is said in its lock's note)
    indexes = index_statuses(collector.outcomes, labels)
    problems = tuple(dict.fromkeys(collector.problems))
    empty = empty_roles(stack, collected.groups, collector, labels)
    twins = twin_report(matrix, resolution.chosen, collector.unreadable_twins)
    chosen = None if resolution.chosen is None else [resolution.chosen[r] for r in stack.roles]
    sets = install_sets(matrix, chosen, installs)
    whole = _installs(matrix, sets, collector, runtime_wheels if runtime else None, options, reads.store)
    return SolveResult(
        matrix=matrix,
        resolution=resolution,
        indexes=indexes,
        excluded=collected.excluded,
        near_misses=misses,
        problems=problems,
        override=override,
        empty_roles=empty,
        twins=twins,
        installs=whole,
        range_read=tuple(collector.unverified_files()),
    )
