"""Rich rendering of a solve's summary: the chosen set (or why there is none), twins, missing roles, what
overriding declared pins would give, near misses, each index's state, problems, and the matrix's size."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from abiprobe.report.lines import Line, Part, Stderr, Warn
from abiprobe.report.matrix_json import index_state
from abiprobe.solve.result import SolveResult

SHOWN_LINES = 10


def some(lines: list[str], what: str, where: str) -> list[str]:
    """The first lines of a list, then how many more there are and where the whole list is."""
    shown = [f"  {line}" for line in lines[:SHOWN_LINES]]
    if len(lines) > SHOWN_LINES:
        shown.append(f"  +{len(lines) - SHOWN_LINES} more {what}: all of them in {where}")
    return shown


def render_summary(result: SolveResult, where: str) -> list[Part]:
    """``where``: where the whole lists are (the matrix file written, or ``--json``)."""
    parts: list[Part] = []
    chosen = result.resolution.chosen
    if chosen:
        table = Table(title=f"Chosen set for {result.matrix.target.key()}")
        table.add_column("role")
        table.add_column("wheel")
        for ident, label in chosen.items():
            table.add_row(ident, label)
        parts.append(table)
        for role in result.matrix.stack.roles:
            for p in result.matrix.group(role, chosen[role]).arch_wheels if role in chosen else ():
                what = f"{p.chosen}: {p.reason}" if p.chosen else f"no provider: {p.reason}"
                parts.append(f"  provider of {p.shim}: {escape(what)}")
    else:
        parts.append("[bold red]No passing set.[/]")
        parts.extend(f"  {escape(line)}" for line in result.resolution.conflicts)
    parts.extend(f"  [yellow]twin[/] {escape(twin.explanation)}" for twin in result.twins)
    parts.extend(f"  [red]missing[/] {escape(empty.explanation)}" for empty in result.empty_roles)
    over = result.override
    if over is not None:
        newer = ", ".join(over.chosen.values())
        parts.append(f"  [blue]if declared pins were overridden[/]: {newer}")
        for b in over.blocked_by:
            parts.append(f"    blocked by {b.by} requiring {b.requirement} (the set has {b.found})")
        parts.extend(Line(f"    $ {line}", markup=False) for line in (*over.uv, *over.pip))
    shown = [f"[yellow]near miss[/] {m.id}: {m.reason}" for m in result.near_misses]
    parts.extend(some(shown, "near misses", where))
    for idx in result.indexes:
        state = index_state(idx.to_json())
        if idx.answered:
            colour = "green" if idx.whole else "yellow"
            parts.append(f"  index {idx.url}: [{colour}]{escape(state)}[/]")
        else:
            parts.append(Warn(f"index {idx.url}: {state}"))
    problems = [f"[red]problem[/] {escape(p)}" for p in result.problems]
    parts.extend(Stderr(line) for line in some(problems, "problems", where))
    s = result.matrix.stats
    parts.append(
        f"  matrix: {len(result.matrix.cells)} cells from {s.analyses} analyses "
        f"(a naive loop: {s.naive_analyses}; {s.analyses_run} run, {s.analyses_stored} stored)"
    )
    return parts
