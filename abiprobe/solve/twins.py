"""Filenames listed with different sha256 (an append-mode page, two indexes): which one the chosen set uses
and why, and what became of the other. Each twin was a candidate of its own, judged by its own bytes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from abiprobe.model.verdict import STATUS_ORDER
from abiprobe.solve.candidates import StackCandidate
from abiprobe.solve.matrix import Matrix, explain


@dataclass(frozen=True)
class TwinEntry:
    """One listing of a twin filename: its sha256, where it was listed, and whether the set uses it."""

    sha256: str
    url: str
    index: str
    used: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TwinFile:
    filename: str
    role: str
    entries: tuple[TwinEntry, ...]

    @property
    def explanation(self) -> str:
        parts = [
            f"{'uses' if e.used else 'flags'} {e.sha256[:12]} ({e.index}): {e.reason}" for e in self.entries
        ]
        return f"{self.filename} is listed with {len(self.entries)} sha256; the set " + "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "role": self.role,
            "entries": [e.to_json() for e in self.entries],
            "explanation": self.explanation,
        }


def twin_report(
    matrix: Matrix, chosen: Mapping[str, str] | None, unreadable: Mapping[tuple[str, str], str]
) -> tuple[TwinFile, ...]:
    """Every twin filename among the stack's candidates, in role order."""
    used = set()
    if chosen is not None:
        for role in matrix.stack.roles:
            if role in chosen:
                used |= {_key(w) for w in matrix.group(role, chosen[role]).wheels}
    out: list[TwinFile] = []
    for role in matrix.stack.roles:
        twins: dict[str, dict[tuple[str, str], tuple[StackCandidate, list[str]]]] = {}
        for g in matrix.groups.get(role, ()):
            for w in g.wheels:
                if w.candidate.file.duplicate:
                    entry = twins.setdefault(w.filename, {}).setdefault(_key(w), (w, []))
                    entry[1].append(g.id)
        for filename, by_key in twins.items():
            entries = tuple(_entry(matrix, w, ids, _key(w) in used, unreadable) for w, ids in by_key.values())
            out.append(TwinFile(filename, role, entries))
    return tuple(out)


def _key(w: StackCandidate) -> tuple[str, str]:
    return w.candidate.file.url, w.candidate.file.sha256 or ""


def _entry(
    matrix: Matrix,
    w: StackCandidate,
    group_ids: list[str],
    used: bool,
    unreadable: Mapping[tuple[str, str], str],
) -> TwinEntry:
    f = w.candidate.file
    if used:
        reason = "its bytes pass with the rest of the chosen set"
    elif w.info is None:
        reason = f"its bytes could not be read ({unreadable.get(_key(w), 'no facts')}): it was not checked"
    else:
        best = _best(matrix, group_ids)
        if best is None:
            reason = "in no combination of the matrix"
        elif best[0] in ("ok", "warn"):
            reason = f"passes too ({best[0]}); the resolver kept the one listed first"
        else:
            reason = f"{best[0]} at best: {best[1]}"
    return TwinEntry(f.sha256 or "", f.url, f.index_url, used, reason)


def _best(matrix: Matrix, group_ids: list[str]) -> tuple[str, str] | None:
    """The best status (and its explanation) of the groups with a base: a cell they are a member of, or
    their pair with a base (a per-cell role's option that lost)."""
    found = [(c.status, c.explanation) for c in matrix.cells if any(g in c.members for g in group_ids)]
    found += [(p.status, explain(p.verdicts)) for p in matrix.pairs.values() if p.member in group_ids]
    return min(found, key=lambda s: STATUS_ORDER[s[0]], default=None)
