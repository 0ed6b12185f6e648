"""Rich rendering of a judged set (``abiprobe check``): the verdict line first, then the set, what the install
closure added, the first error as the loader prints it, a table of every verdict that is not ok, and after
a long list or a table the verdict line again."""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape
from rich.table import Table

from abiprobe.analyze.analysis import SetAnalysis
from abiprobe.model.verdict import CHECKS, STATUS_ORDER
from abiprobe.report.lines import Line, Part
from abiprobe.solve.install import AddedWheel

STYLE = {
    "ok": "green",
    "warn": "yellow",
    "blocked": "blue",
    "system": "cyan",
    "unknown": "magenta",
    "fail": "red",
}


def _needs(analysis: SetAnalysis) -> str:
    """The system libraries the set needs, with the packages that ship them (from ``system`` evidence)."""
    found: dict[str, str] = {}
    for v in analysis.import_verdicts:
        for p in v.evidence.get("system", ()) if v.status == "system" else ():
            found.setdefault(
                p["soname"], f"{p['soname']} (Debian/Ubuntu: {p['debian']}; RHEL family: {p['rhel']})"
            )
    return ", ".join(found.values())


def _verdict_line(analysis: SetAnalysis) -> str:
    """What importing the set does, with the worst status of each check that decides it."""
    worst: dict[str, str] = {}
    for v in analysis.import_verdicts:
        if STATUS_ORDER[v.status] >= STATUS_ORDER[worst.get(v.check, "ok")]:
            worst[v.check] = v.status
    checks = ", ".join(f"{c} {worst[c]}" for c in CHECKS if c in worst)
    status = analysis.import_status
    head = status.upper() if status != "system" else f"LOADS WHERE THE SYSTEM HAS {escape(_needs(analysis))}"
    return f"[{STYLE[status]}]{head}[/{STYLE[status]}] {checks}"


def render_check(analysis: SetAnalysis, added: Sequence[AddedWheel] = ()) -> list[Part]:
    verdict = _verdict_line(analysis)
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
        if first.raised:
            parts.append(f"  (then the package {first.via}:)")
            parts.append(Line(f"  {first.raised}", markup=False, soft_wrap=True))
        elif first.via:
            parts.append(f"  (loaded by {first.via}, which may re-raise it in its own words)")
    feature_paths = {u.path for u in analysis.features}
    problems = [v for v in analysis.failures() if v.subject not in feature_paths]
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
    if analysis.features:
        works = ", importing works" if analysis.import_status in ("ok", "warn") else ""
        parts.append(
            f"features that will not load ({len(analysis.features)}; loaded on first use or optional{works}):"
        )
        for u in analysis.features:
            why = next((v.text for v in u.verdicts if v.status == u.status), "")
            parts.append(Line(f"  {u.path} ({u.dist}): {why}", markup=False, soft_wrap=True))
    if added or problems or analysis.features:
        parts.append(verdict)
    return parts
