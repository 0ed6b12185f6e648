"""Rich rendering of a judged set (``abiprobe check``): the verdict line first, then the set, what the install
closure added, the first error as the loader prints it, a table of every verdict that is not ok, and after
a long list or a table the verdict line again."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from abiprobe.analyze.analysis import SetAnalysis
from abiprobe.report.lines import Line, Part
from abiprobe.solve.install import AddedWheel

STYLE = {"ok": "green", "warn": "yellow", "blocked": "blue", "unknown": "magenta", "fail": "red"}


def render_check(analysis: SetAnalysis, added: Sequence[AddedWheel] = ()) -> list[Part]:
    checks = ", ".join(f"{c} {s}" for c, s in analysis.worst_by_check().items())
    status = analysis.status
    verdict = f"[{STYLE[status]}]{status.upper()}[/{STYLE[status]}] {checks}"
    parts: list[Part] = [verdict, f"target {analysis.target.key()}  profile {analysis.profile}"]
    named = [w for w in analysis.wheels if w not in {a.label for a in added}]
    parts.append("set: " + ", ".join(named))
    if added:
        parts.append(f"added by the install closure ({len(added)}):")
        for a in added:
            state = f" [magenta](not read: {escape(a.unread)})[/]" if a.unread else ""
            parts.append(Line(f"  + {escape(a.label)}: {escape(a.why)}{state}", soft_wrap=True))
    first = analysis.first_error
    if first is not None:
        unsure = "" if first.exact else " (relocation order not read: one of the undefined symbols below)"
        parts.append(f"first error, as the loader prints it{unsure}:")
        parts.append(Line(f"  {first.text}", markup=False, soft_wrap=True))
        if first.via:
            parts.append(f"  (loaded by {first.via}, which may re-raise it in its own words)")
    problems = analysis.failures()
    if problems:
        table = Table(show_lines=False)
        for col in ("status", "check", "subject", "explanation"):
            table.add_column(col, overflow="fold")
        for v in problems:
            style = STYLE[v.status]
            table.add_row(f"[{style}]{v.status}[/{style}]", v.check, escape(v.subject), escape(v.text))
        parts.append(table)
    for v in analysis.set_verdicts:
        r = v.evidence.get("torch_range")
        if isinstance(r, dict):
            declared = "none" if r["declared"] is None else f"torch{r['declared']}"
            text = f"torch range of {v.subject}: {r['kind']} ABI, {r['range']}; declared {declared}"
            parts.append(Line(f"{text}: {r['verdict']}", markup=False))
    if added or problems:
        parts.append(verdict)
    return parts
