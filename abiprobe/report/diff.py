"""Two matrix documents of one target compared: wheels that came and went, verdicts that flipped, and why.

Exit code bits (like abidiff's): 0 nothing flipped, 4 some cell's status changed, 8 some cell went from
ok to fail (a regression). Pure: works on the JSON documents ``solve`` writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from abiprobe.model.verdict import STATUS_ORDER

EXIT_SAME, EXIT_FLIPPED, EXIT_REGRESSED = 0, 4, 8


@dataclass(frozen=True)
class WheelRef:
    role: str
    name: str
    version: str
    filename: str
    sha256: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "name": self.name,
            "version": self.version,
            "filename": self.filename,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class Flip:
    """One cell whose status changed; ``checks`` are the (check, before, after) that moved."""

    row: str
    col: str | None
    before: str
    after: str
    was: str
    reason: str
    checks: tuple[tuple[str, str, str], ...]

    @property
    def label(self) -> str:
        return self.row if self.col is None else f"{self.row} + {self.col}"

    @property
    def regression(self) -> bool:
        return self.before == "ok" and self.after == "fail"

    def to_json(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "col": self.col,
            "before": self.before,
            "after": self.after,
            "was": self.was,
            "reason": self.reason,
            "regression": self.regression,
            "checks": [{"check": c, "before": b, "after": a} for c, b, a in self.checks],
        }


@dataclass(frozen=True)
class MatrixDiff:
    target: str
    new_wheels: tuple[WheelRef, ...]
    removed_wheels: tuple[WheelRef, ...]
    changed_wheels: tuple[tuple[WheelRef, WheelRef], ...]  # same filename, other sha256
    flips: tuple[Flip, ...]
    new_cells: tuple[tuple[str, str | None, str], ...]  # (row, col, status)
    removed_cells: tuple[tuple[str, str | None, str], ...]
    chosen_before: dict[str, str] | None
    chosen_after: dict[str, str] | None
    old_target: str | None = None  # the earlier matrix's target key (None: the same as ``target``)

    @property
    def other_targets(self) -> str | None:
        """``OLD is for X, NEW for Y``: a diff across targets compares cells that mean different things."""
        if self.old_target is None or self.old_target == self.target:
            return None
        return f"the matrices are of different targets: OLD is for {self.old_target}, NEW for {self.target}"

    @property
    def regressions(self) -> tuple[Flip, ...]:
        return tuple(f for f in self.flips if f.regression)

    @property
    def exit_code(self) -> int:
        return (EXIT_FLIPPED if self.flips else 0) | (EXIT_REGRESSED if self.regressions else 0)

    @property
    def unchanged(self) -> bool:
        return not (
            self.new_wheels
            or self.removed_wheels
            or self.changed_wheels
            or self.flips
            or self.new_cells
            or self.removed_cells
            or self.chosen_before != self.chosen_after
        )

    def to_json(self) -> dict[str, Any]:
        def cells(items: Iterable[tuple[str, str | None, str]]) -> list[dict[str, Any]]:
            return [{"row": r, "col": c, "status": s} for r, c, s in items]

        return {
            "kind": "abiprobe-matrix-diff",
            "schema_version": 1,
            "target": self.target,
            "old_target": self.old_target or self.target,
            "new_wheels": [w.to_json() for w in self.new_wheels],
            "removed_wheels": [w.to_json() for w in self.removed_wheels],
            "changed_wheels": [{"before": a.to_json(), "after": b.to_json()} for a, b in self.changed_wheels],
            "flips": [f.to_json() for f in self.flips],
            "new_cells": cells(self.new_cells),
            "removed_cells": cells(self.removed_cells),
            "chosen": {"before": self.chosen_before, "after": self.chosen_after},
            "exit_code": self.exit_code,
        }


def wheels_of(doc: dict[str, Any]) -> dict[str, WheelRef]:
    """Every wheel a matrix saw, by filename: the groups' wheels and the excluded ones."""
    out: dict[str, WheelRef] = {}
    for role, groups in doc["groups"].items():
        for g in groups:
            for w in g["wheels"]:
                out[w["filename"]] = WheelRef(role, w["name"], w["version"], w["filename"], w["sha256"])
    for e in doc["excluded"]:
        out.setdefault(e["filename"], WheelRef(e["role"], e["name"], e["version"], e["filename"], None))
    return out


def _cells(doc: dict[str, Any]) -> dict[tuple[str, str | None], dict[str, Any]]:
    return {(c["row"], c["col"]): c for c in doc["cells"]}


def _moved_checks(old: dict[str, Any], new: dict[str, Any]) -> tuple[tuple[str, str, str], ...]:
    names = list(dict.fromkeys([*old["checks"], *new["checks"]]))
    moved = []
    for name in names:
        before, after = old["checks"].get(name, "ok"), new["checks"].get(name, "ok")
        if before != after:
            moved.append((name, before, after))
    return tuple(moved)


def diff_matrices(old: dict[str, Any], new: dict[str, Any]) -> MatrixDiff:
    """Compare two matrix documents (normally the same target on two days)."""
    ow, nw = wheels_of(old), wheels_of(new)
    oc, nc = _cells(old), _cells(new)
    flips = []
    for key, cell in nc.items():
        before = oc.get(key)
        if before is None or before["status"] == cell["status"]:
            continue
        flips.append(
            Flip(
                key[0],
                key[1],
                before["status"],
                cell["status"],
                before["explanation"],
                cell["explanation"],
                _moved_checks(before, cell),
            )
        )
    flips.sort(key=lambda f: (-STATUS_ORDER[f.after] + STATUS_ORDER[f.before], f.label))
    changed = tuple(
        (ow[f], nw[f])
        for f in sorted(set(ow) & set(nw))
        if ow[f].sha256 and nw[f].sha256 and ow[f].sha256 != nw[f].sha256
    )
    return MatrixDiff(
        target=new["target"]["key"],
        new_wheels=tuple(nw[f] for f in sorted(set(nw) - set(ow))),
        removed_wheels=tuple(ow[f] for f in sorted(set(ow) - set(nw))),
        changed_wheels=changed,
        flips=tuple(flips),
        new_cells=tuple((r, c, nc[(r, c)]["status"]) for r, c in nc if (r, c) not in oc),
        removed_cells=tuple((r, c, oc[(r, c)]["status"]) for r, c in oc if (r, c) not in nc),
        chosen_before=old.get("chosen"),
        chosen_after=new.get("chosen"),
        old_target=old["target"]["key"],
    )


def _chosen(chosen: dict[str, str] | None) -> str:
    return ", ".join(chosen.values()) if chosen else "none"


def render_markdown(d: MatrixDiff) -> str:
    """The diff as Markdown (a GitHub job summary, a ticket section)."""
    out = [f"### Matrix diff: {d.target}", ""]
    if d.other_targets:
        out += [f"> ⚠️ {d.other_targets[0].upper()}{d.other_targets[1:]}.", ""]
    if d.unchanged:
        return "\n".join([*out, "No change.", ""])
    verdict = (f"**{len(d.regressions)} regression(s)** (ok → fail), " if d.regressions else "") + (
        f"{len(d.flips)} verdict(s) flipped" if d.flips else "no verdict flipped"
    )
    out += [verdict, ""]
    if d.chosen_before != d.chosen_after:
        out += [f"Chosen set: {_chosen(d.chosen_before)} → **{_chosen(d.chosen_after)}**", ""]
    if d.flips:
        out += ["| set | before | after | checks | reason |", "|---|---|---|---|---|"]
        for f in d.flips:
            moved = ", ".join(f"{c} {b}→{a}" for c, b, a in f.checks)
            reason = f.reason if f.after != "ok" else f"was: {f.was}"
            out.append(f"| {_md(f.label)} | {f.before} | {f.after} | {moved} | {_md(reason)} |")
        out.append("")
    for title, wheels in (("New wheels", d.new_wheels), ("Removed wheels", d.removed_wheels)):
        if wheels:
            out += [f"{title} ({len(wheels)}):", ""]
            out += [f"- `{w.filename}` ({w.role})" for w in wheels]
            out.append("")
    if d.changed_wheels:
        out += ["Re-uploaded with another sha256:", ""]
        out += [f"- `{a.filename}`: {a.sha256} → {b.sha256}" for a, b in d.changed_wheels]
        out.append("")
    for title, cells in (("New cells", d.new_cells), ("Removed cells", d.removed_cells)):
        if cells:
            out += [f"{title}: " + ", ".join(f"{r}{' + ' + c if c else ''} ({s})" for r, c, s in cells), ""]
    return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
