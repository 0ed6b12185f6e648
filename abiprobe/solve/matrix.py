"""The matrix of stack combinations, composed from memoised pairwise results.

A kernel wheel's verdicts depend only on (kernel, torch, runtime, target) and flashinfer's on
(flashinfer group, torch, target), so each pair is analysed once and every cell is composed from its
pairs plus cheap set-level checks (import-package clashes, Requires-Dist between members).
Rows are base (torch) candidates, columns the second role, later roles a per-cell best choice.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from packaging.utils import canonicalize_name

from abiprobe.analyze.checks import files_verdicts_of
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.stack import Stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import CHECKS, STATUS_ORDER, Status, Verdict, worst
from abiprobe.solve.arch_wheels import ArchWheelChoice
from abiprobe.solve.candidates import StackCandidate


@dataclass(frozen=True)
class Group:
    """One pick for a role: the core wheel plus its version-locked companions (``missing``: none found).

    ``arch_wheels``: for each shim companion, the per-architecture wheel the target loads (its wheel is
    among ``companions``) and why, or why there is none."""

    role: str
    core: StackCandidate
    companions: tuple[StackCandidate, ...] = ()
    missing: tuple[str, ...] = ()
    arch_wheels: tuple[ArchWheelChoice, ...] = ()

    @property
    def id(self) -> str:
        """``name==version``; a wheel whose filename is listed with other hashes adds its own sha256."""
        marks = "".join(
            w.twin_mark if w is self.core else f" {w.name}{w.twin_mark}" for w in self.wheels if w.twin_mark
        )
        return f"{self.core.name}=={self.core.version}{marks}"

    @property
    def key(self) -> str:
        return "+".join(w.key for w in self.wheels)

    @property
    def wheels(self) -> tuple[StackCandidate, ...]:
        return (self.core, *self.companions)


class Evaluator(Protocol):
    """Static analysis of the base alone and of one member group loaded into the base."""

    def base(self, base: Group) -> Sequence[Verdict]: ...

    def pair(self, base: Group, member: Group) -> Sequence[Verdict]: ...


@dataclass(frozen=True)
class PairResult:
    """Verdicts of one analysed pair (or of the base alone, ``member`` empty)."""

    id: str
    base: str
    member: str
    verdicts: tuple[Verdict, ...]

    @property
    def status(self) -> Status:
        return worst(v.status for v in self.verdicts)

    def checks(self) -> dict[str, Status]:
        return check_statuses(self.verdicts)


@dataclass(frozen=True)
class Choice:
    """The per-cell pick for a role beyond the two axes: the chosen group and each option's status."""

    role: str
    chosen: str | None
    options: tuple[tuple[str, Status], ...]


@dataclass(frozen=True)
class Cell:
    """One combination: its status, per-check statuses, the pairs it reuses and set-level verdicts."""

    row: str
    col: str | None
    members: tuple[str, ...]
    status: Status
    checks: Mapping[str, Status]
    pairs: tuple[str, ...]
    set_verdicts: tuple[Verdict, ...]
    choices: tuple[Choice, ...]
    explanation: str
    first_error: str | None = None  # the loader's first error importing the set, as Python prints it


@dataclass
class MatrixStats:
    analyses: int = 0
    pair_lookups: int = 0
    naive_analyses: int = 0
    analyses_run: int = 0  # of ``analyses``: computed by the evaluator now
    analyses_stored: int = 0  # of ``analyses``: served from stored verdicts


@dataclass(frozen=True)
class Matrix:
    """Every combination of the stack's candidate groups for one target."""

    target: Target
    stack: Stack
    groups: Mapping[str, tuple[Group, ...]]
    pairs: Mapping[str, PairResult]
    cells: tuple[Cell, ...]
    stats: MatrixStats = field(default_factory=MatrixStats)

    @property
    def row_role(self) -> str:
        return self.stack.roles[0]

    @property
    def col_role(self) -> str | None:
        return self.stack.roles[1] if len(self.stack.roles) > 1 else None

    def group(self, role: str, group_id: str) -> Group:
        for g in self.groups.get(role, ()):
            if g.id == group_id:
                return g
        raise KeyError(group_id)

    def cell(self, row: str, col: str | None) -> Cell:
        for c in self.cells:
            if c.row == row and c.col == col:
                return c
        raise KeyError((row, col))


def check_statuses(verdicts: Sequence[Verdict]) -> dict[str, Status]:
    out: dict[str, Status] = {}
    for v in verdicts:
        out[v.check] = worst((out.get(v.check, "ok"), v.status))
    return {c: out[c] for c in sorted(out, key=_check_order)}


def _check_order(check: str) -> int:
    return CHECKS.index(check) if check in CHECKS else len(CHECKS)


def first_loader_error(verdicts: Sequence[Verdict]) -> str | None:
    """The first failing verdict's loader message (verdicts come in load order: base, then members)."""
    for v in verdicts:
        message = v.evidence.get("loader_message")
        if v.status == "fail" and isinstance(message, dict):
            return str(message["text"])
    return None


def explain(verdicts: Sequence[Verdict]) -> str:
    """One line: the most severe verdict's explanation, and how many other problems there are."""
    bad = sorted(
        (v for v in verdicts if v.status != "ok"),
        key=lambda v: (-STATUS_ORDER[v.status], _check_order(v.check)),
    )
    if bad and bad[0].status == "fail":
        # the loader's own first failure leads (verdicts come in load order); the pin that also forbids
        # the set is named after it: a set that does not load is ``fail``, never merely ``blocked``
        first = next((v for v in verdicts if v.status == "fail" and "loader_message" in v.evidence), bad[0])
        bad = [first, *(v for v in bad if v is not first)]
    ranges = _torch_ranges(verdicts, bad[0] if bad else None)
    if not bad:
        return "all checks pass" + ranges
    head = bad[0]
    where = f"{head.subject}: " if head.subject else ""
    more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
    pin = next((v for v in bad if v.status == "blocked"), None) if head.status == "fail" else None
    pinned = f"; blocked as well: {pin.subject}: {pin.text}" if pin is not None else ""
    return f"{head.check} {head.status}: {where}{head.text}{more}{pinned}{ranges}"


def _torch_ranges(verdicts: Sequence[Verdict], head: Verdict | None) -> str:
    """``; sglang-kernel 0.4.10: torch range agrees (torch==2.14.1; bytes load with torch 2.14.0, 2.14.1)``
    for each kernel's torch-range verdict the head does not already say."""
    parts: list[str] = []
    for v in verdicts:
        r = v.evidence.get("torch_range")
        if not isinstance(r, dict) or v is head:
            continue
        declared = "no torch requirement" if r["declared"] is None else f"torch{r['declared']}"
        if r["kind"] == "stable":
            bytes_say = f"stable ABI, torch >= {r['floor']}"
        else:
            bytes_say = f"bytes load with torch {', '.join(r['loads_with']) or 'no known release'}"
        part = f"; {v.subject}: torch range {r['verdict']} ({declared}; {bytes_say})"
        if part not in parts:
            parts.append(part)
    return "".join(parts)


def set_checks(a: Group, b: Group, target: Target) -> tuple[Verdict, ...]:
    """Checks between two groups of different roles: shared import packages, Requires-Dist both ways."""
    verdicts: list[Verdict] = []
    summaries = [w.summary for g in (a, b) for w in g.wheels if w.summary is not None]
    verdicts += [v for v in files_verdicts_of(summaries) if v.status != "ok"]
    verdicts += _requires(a, b, target) + _requires(b, a, target)
    return tuple(verdicts)


def _requires(src: Group, dst: Group, target: Target) -> list[Verdict]:
    """Requires-Dist of ``src``'s wheels that name one of ``dst``'s projects, checked against its version:
    an unmet one blocks the set (an installer refuses it; the loader might not)."""
    out: list[Verdict] = []
    dst_names = {w.name: w for w in dst.wheels}
    for wheel in src.wheels:
        if wheel.summary is None:
            continue
        for req in applicable_requirements(wheel.summary.metadata.requires_dist, target):
            other = dst_names.get(canonicalize_name(req.name))
            if other is None:
                continue
            who = wheel.label()
            if req.specifier.contains(other.version, prereleases=True):
                out.append(Verdict("requires", "ok", f"{req} is met by {other.version}", subject=who))
                continue
            evidence = {"requirement": str(req), "found": str(other.version), "project": str(other.name),
                        "dist": str(wheel.name)}  # fmt: skip
            text = f"requires {req}, the set has {other.name} {other.version}"
            out.append(Verdict("requires", "blocked", text, subject=who, evidence=evidence))
    return out


def _missing_companions(g: Group) -> tuple[Verdict, ...]:
    missing = tuple(
        Verdict(
            "metadata",
            "warn",
            f"no {name} {g.core.version.public} found: the companion is left out",
            subject=g.id,
        )
        for name in g.missing
    )
    no_provider = tuple(
        Verdict("gpu_arch", "warn", p.reason, subject=p.shim, evidence={"provider": p.to_json()})
        for p in g.arch_wheels
        if p.chosen is None
    )
    return missing + no_provider


class MatrixBuilder:
    """Composes cells from memoised pair analyses; ``stats`` shows how many analyses really ran."""

    def __init__(self, stack: Stack, target: Target, evaluator: Evaluator) -> None:
        self.stack = stack
        self.target = target
        self.evaluator = evaluator
        self.stats = MatrixStats()
        self.pairs: dict[str, PairResult] = {}
        self._by_key: dict[tuple[str, str], PairResult] = {}
        self._sets: dict[tuple[str, str], tuple[Verdict, ...]] = {}

    def _pair(self, base: Group, member: Group | None) -> PairResult:
        key = (base.key, member.key if member else "")
        self.stats.pair_lookups += 1
        found = self._by_key.get(key)
        if found is not None:
            return found
        self.stats.analyses += 1
        if member is None:
            verdicts = tuple(self.evaluator.base(base))
            pid = f"{base.id}"
        else:
            verdicts = tuple(self.evaluator.pair(base, member)) + _missing_companions(member)
            pid = f"{base.id} + {member.id}"
        result = PairResult(pid, base.id, member.id if member else "", verdicts)
        self._by_key[key] = result
        self.pairs[pid] = result
        return result

    def set_verdicts(self, a: Group, b: Group) -> tuple[Verdict, ...]:
        """Set-level verdicts of two groups of different roles (memoised)."""
        key = (a.key, b.key)
        if key not in self._sets:
            self._sets[key] = set_checks(a, b, self.target)
        return self._sets[key]

    def alone(self, group: Group) -> tuple[Status, str]:
        """The base's own verdicts on the target; other roles are only judged together with a base."""
        if group.role != self.stack.roles[0]:
            return "ok", ""
        pair = self._pair(group, None)
        return pair.status, explain(pair.verdicts)

    def together(self, earlier: Group, later: Group) -> tuple[Status, str]:
        """Pair analysis (when ``earlier`` is the base) plus set-level checks of two groups."""
        verdicts = list(self.set_verdicts(earlier, later))
        if earlier.role == self.stack.roles[0]:
            verdicts += self._pair(earlier, later).verdicts
        return worst(v.status for v in verdicts), explain(verdicts)

    def build(self, groups: Mapping[str, Sequence[Group]]) -> Matrix:
        roles = self.stack.roles
        rows = tuple(groups.get(roles[0], ()))
        cols: tuple[Group | None, ...] = tuple(groups.get(roles[1], ())) if len(roles) > 1 else (None,)
        extras = roles[2:]
        naive = 1
        for r in extras:
            naive *= max(1, len(groups.get(r, ())))
        cells: list[Cell] = []
        for row in rows:
            for col in cols:
                cells.append(self._cell(row, col, extras, groups))
                self.stats.naive_analyses += naive
        return Matrix(
            target=self.target,
            stack=self.stack,
            groups={r: tuple(groups.get(r, ())) for r in roles},
            pairs=dict(self.pairs),
            cells=tuple(cells),
            stats=self.stats,
        )

    def _cell(
        self, row: Group, col: Group | None, extras: Sequence[str], groups: Mapping[str, Sequence[Group]]
    ) -> Cell:
        pairs = [self._pair(row, None)]
        set_verdicts: list[Verdict] = []
        picked: list[Group] = [row]
        if col is not None:
            pairs.append(self._pair(row, col))
            set_verdicts += self.set_verdicts(row, col)
            picked.append(col)
        choices: list[Choice] = []
        for role in extras:
            choice, pair, sets = self._choose(role, groups.get(role, ()), row, picked)
            choices.append(choice)
            if pair is None:
                set_verdicts.append(
                    Verdict("requires", "fail", f"no {role} candidate fits the target", subject=role)
                )
                continue
            pairs.append(pair)
            set_verdicts += sets
            picked.append(self.group_by_id(groups, role, choice.chosen))
        verdicts = [v for p in pairs for v in p.verdicts] + set_verdicts
        return Cell(
            row=row.id,
            col=col.id if col else None,
            members=tuple(g.id for g in picked),
            status=worst(v.status for v in verdicts),
            checks=check_statuses(verdicts),
            pairs=tuple(p.id for p in pairs),
            set_verdicts=tuple(set_verdicts),
            choices=tuple(choices),
            explanation=explain(verdicts),
            first_error=first_loader_error(verdicts),
        )

    @staticmethod
    def group_by_id(groups: Mapping[str, Sequence[Group]], role: str, gid: str | None) -> Group:
        return next(g for g in groups[role] if g.id == gid)

    def _choose(
        self, role: str, options: Sequence[Group], row: Group, picked: Sequence[Group]
    ) -> tuple[Choice, PairResult | None, tuple[Verdict, ...]]:
        """Newest option that passes with this row and the members picked so far, else the least bad."""
        scored: list[tuple[str, Status, PairResult, tuple[Verdict, ...]]] = []
        for g in options:
            pair = self._pair(row, g)
            sets = tuple(v for other in picked[1:] for v in self.set_verdicts(other, g)) + self.set_verdicts(
                row, g
            )
            status = worst([pair.status, *(v.status for v in sets)])
            scored.append((g.id, status, pair, sets))
        opts = tuple((gid, st) for gid, st, _, _ in scored)
        if not scored:
            return Choice(role, None, opts), None, ()
        best = min(scored, key=lambda s: STATUS_ORDER[s[1]])
        return Choice(role, best[0], opts), best[2], best[3]


def build_groups(
    role_candidates: Mapping[str, Sequence[StackCandidate]],
    companions: Mapping[str, Mapping[str, Sequence[StackCandidate]]],
    stack: Stack,
    match: Callable[..., dict[str, StackCandidate | None]],
    listed: Collection[str] | None = None,
) -> dict[str, tuple[Group, ...]]:
    """Turn each role's kept core candidates into groups with their version-matched companions.

    A companion counts as missing only when it is in ``listed`` (some index lists it in other versions);
    one no index lists at all (flashinfer-jit-cache outside flashinfer's index) is not part of the set.
    """
    out: dict[str, tuple[Group, ...]] = {}
    for member in stack.members:
        groups: list[Group] = []
        own = companions.get(member.role, {})
        for core in role_candidates.get(member.role, ()):
            found = match(core.version, own)
            missing = tuple(n for n, c in found.items() if c is None and (listed is None or n in listed))
            # a companion filename listed with several hashes: one group per twin, each judged on its bytes
            twins = [
                [t for t in own.get(n, ()) if t.filename == c.filename] or [c]
                for n, c in found.items()
                if c is not None
            ]
            for comps in itertools.product(*twins):
                groups.append(Group(member.role, core, tuple(comps), missing))
        out[member.role] = tuple(groups)
    return out
