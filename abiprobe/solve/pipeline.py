"""One solve, as stages each called once on the previous one's value:

1. ``collect`` (:mod:`abiprobe.solve.collect`): each role's candidates listed, the facts of the newest few
   read, the groups built -> ``Collected`` (with why each unread wheel of them could not be read);
2. ``build_matrix``: the groups' pairwise analyses on the target, with the runtime wheels their base pins
   (:mod:`abiprobe.solve.runtime_wheels`) -> ``Built``;
3. ``resolve_matrix``: the newest passing set over the matrix's verdicts -> ``Resolution``;
4. ``explain``: near misses, the set that loads if pins were overridden, index statuses, empty roles,
   twins, and the matrix with its counts -> ``Explained`` (from the reads' ``ReadLedger`` so far);
5. ``whole_installs``: the whole install of the chosen set and of the cells selected for probe jobs ->
   ``SetInstall`` each.

Everything it reads comes in through the ports of :mod:`abiprobe.solve.ports` (``SolveReads``, every port
required: the index, the facts readers, the verdict store, progress), wired in by ``abiprobe.commands``;
tests drive it with a local index server and the bench counts bytes. The reader (``Collector``) lists and
reads for the stages that need to (the runtime wheels and the closures read on demand); what the later
stages are told of the reads is a value (``ReadLedger``). It returns one value (``SolveResult``): nothing
it read through stays live after it returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from packaging.version import Version

from abiprobe.analyze.preloads import preload_pattern
from abiprobe.analyze.profiles import Profile
from abiprobe.model.candidate import NOT_CACHED
from abiprobe.model.stack import Stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import STATUS_ORDER
from abiprobe.solve.candidates import Exclusion, FilterOptions, StackCandidate, public_version
from abiprobe.solve.closure import complete_install
from abiprobe.solve.collect import Collected, Collector, ReadLedger, collect
from abiprobe.solve.evaluate import StaticEvaluator
from abiprobe.solve.matrix import Group, Matrix, MatrixBuilder
from abiprobe.solve.override import OverrideSet, override_set
from abiprobe.solve.ports import AnalysisStore, FullFacts, PageOutcome, SolveReads
from abiprobe.solve.resolver import Resolution, build_picks, resolve, rules_out
from abiprobe.solve.result import CellSelection, EmptyRole, IndexStatus, NearMiss, SetInstall, SolveResult
from abiprobe.solve.runtime_wheels import RuntimeWheels
from abiprobe.solve.twins import TwinFile, twin_report


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
    stack: Stack,
    groups: Mapping[str, Sequence[Group]],
    answers: Mapping[str, Sequence[PageOutcome]],
    labels: Mapping[str, str],
) -> tuple[EmptyRole, ...]:
    """Every role without a single candidate, with the indexes asked for its names (each by its URL)."""
    out = []
    for m in stack.members:
        if groups.get(m.role):
            continue
        outcomes = [o for n in m.names for o in answers.get(str(n), ())]
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


def whole_installs(
    built: Built,
    resolution: Resolution,
    cells: CellSelection,
    reader: Collector,
    runtime: RuntimeWheels | None,
    options: FilterOptions,
    store: AnalysisStore,
) -> dict[tuple[str, ...], SetInstall]:
    """The whole install of each set ``install_sets`` selects: its stack wheels, the runtime wheels its
    base pins, and the rest of its install (without ``runtime``: the stack wheels alone)."""
    matrix = built.matrix
    chosen = None if resolution.chosen is None else [resolution.chosen[r] for r in matrix.stack.roles]
    sets = install_sets(matrix, chosen, cells)
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
            completed[key] = complete_install(roots, reader, matrix.target, options, memo=store)
        rest, problem = completed[key]
        have = names | {w.filename for w in pinned}
        note = f"incomplete: {problem}" if problem else ""
        added = tuple(w for w in rest if w.filename not in have)
        out[members] = SetInstall(stack_wheels, pinned, added, note)
    return out


@dataclass(frozen=True)
class Built:
    """The matrix stage's value: the matrix, the builder its verdicts come from (asked again, memoised, by
    the later stages) and the evaluator, whose counts the matrix's stats take once the verdicts are in."""

    matrix: Matrix
    builder: MatrixBuilder
    evaluator: StaticEvaluator


@dataclass(frozen=True)
class Explained:
    """The explaining stage's value: what lost and why, what the indexes answered, what is missing."""

    near_misses: tuple[NearMiss, ...]
    override: OverrideSet | None
    indexes: tuple[IndexStatus, ...]
    problems: tuple[str, ...]
    empty_roles: tuple[EmptyRole, ...]
    twins: tuple[TwinFile, ...]
    matrix: Matrix  # the built matrix with its counts, every verdict the explaining asked for in


def build_matrix(
    collected: Collected,
    stack: Stack,
    target: Target,
    profile: Profile,
    runtime: RuntimeWheels | None,
    store: AnalysisStore,
    full: FullFacts,
) -> Built:
    """The groups' pairwise analyses on the target (with ``runtime``, the runtime wheels their base pins
    loaded beside them; ``full``: the full facts behind the wheels' summaries), as the matrix."""
    torch_rows = [g.core for g in collected.groups.get(stack.roles[0], ())]
    if runtime is not None:
        evaluator = StaticEvaluator(
            target,
            profile,
            runtime,
            store=store,
            runtime_keys=runtime.summaries,
            torch_candidates=torch_rows,
            unread=collected.unread,
            runtime_unread=runtime.unread,
            stack=stack,
            full=full,
        )
    else:
        evaluator = StaticEvaluator(
            target,
            profile,
            lambda _g: (),
            store=store,
            torch_candidates=torch_rows,
            unread=collected.unread,
            stack=stack,
            full=full,
        )
    builder = MatrixBuilder(stack, target, evaluator)
    return Built(builder.build(collected.groups), builder, evaluator)


def resolve_matrix(built: Built) -> Resolution:
    """The newest passing set the resolver finds over the matrix's verdicts."""
    matrix = built.matrix
    picks = build_picks(matrix.stack, matrix.groups, matrix.target, built.builder)
    return resolve(matrix.stack, picks, matrix.target)


def explain(
    built: Built,
    resolution: Resolution,
    collected: Collected,
    ledger: ReadLedger,
    labels: Mapping[str, str],
) -> Explained:
    """Why each newer candidate lost, the set that loads if declared pins were overridden, and what the
    indexes answered for the matrix (``ledger``: the reads up to now; the rest of an install is said in
    its lock's note). The matrix's counts are taken once its verdicts are all in."""
    matrix, builder = built.matrix, built.builder
    misses = near_misses(matrix, builder, resolution.chosen, collected.excluded)
    override = override_set(matrix, builder, resolution)
    stats = replace(
        builder.stats,
        analyses_run=built.evaluator.analyses_run,
        analyses_stored=built.evaluator.analyses_stored,
    )
    return Explained(
        near_misses=misses,
        override=override,
        indexes=index_statuses(ledger.outcomes, labels),
        problems=ledger.problems,
        empty_roles=empty_roles(matrix.stack, collected.groups, ledger.asked, labels),
        twins=twin_report(matrix, resolution.chosen, ledger.unreadable_twins),
        matrix=replace(matrix, stats=stats),
    )


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
    """The stages in order, each called once on the previous one's value: list candidates and read their
    facts into groups, build the matrix from pairwise analyses, resolve, explain what lost, and resolve the
    whole install of the chosen set (and of the cells ``installs`` selects for probe jobs)."""
    reader = Collector(
        reads.index,
        reads.facts_for,
        target,
        reads.metadata_for,
        reads.runtime_facts_for,
        reads.progress,
        reads.variant_facts_for,
    )
    preloaded = preload_pattern(stack.loading())
    runtime_wheels = (
        RuntimeWheels(reader, options, reads.store, preloaded, reads.full_facts) if runtime else None
    )
    collected = collect(stack, reader, options, window)
    built = build_matrix(collected, stack, target, profile, runtime_wheels, reads.store, reads.full_facts)
    resolution = resolve_matrix(built)
    explained = explain(built, resolution, collected, reader.ledger(), reads.index_urls)
    whole = whole_installs(built, resolution, installs, reader, runtime_wheels, options, reads.store)
    read = reader.ledger()
    return SolveResult(
        matrix=explained.matrix,
        resolution=resolution,
        indexes=explained.indexes,
        excluded=collected.excluded,
        near_misses=explained.near_misses,
        problems=explained.problems,
        unread=read.unread_wheels,
        override=explained.override,
        empty_roles=explained.empty_roles,
        twins=explained.twins,
        installs=whole,
        range_read=read.range_read,
        listed=read.listed,
    )
