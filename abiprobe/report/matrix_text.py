"""Rich rendering of a matrix document: one table of cell statuses, then the chosen set."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.table import Table

from abiprobe.report.matrix_json import axis_ids, title_of

_COLOUR = {
    "ok": "green",
    "warn": "yellow",
    "blocked": "blue",
    "system": "cyan",
    "fail": "red",
    "unknown": "dim",
}


def render_table(doc: dict[str, Any]) -> list[RenderableType]:
    rows, cols = axis_ids(doc)
    cells = {(c["row"], c["col"]): c for c in doc["cells"]}
    table = Table(title=title_of(doc))
    axes = doc["axes"]
    table.add_column(f"{axes['rows']} \\ {axes['cols'] or ''}")
    for col in cols:
        table.add_column(col or "")
    for r in rows:
        line = [r]
        for col in cols:
            c = cells.get((r, col))
            line.append(f"[{_COLOUR[c['status']]}]{c['status']}[/]" if c else "")
        table.add_row(*line)
    parts: list[RenderableType] = [table]
    chosen = doc.get("chosen")
    if isinstance(chosen, dict):
        parts.append("chosen: " + ", ".join(chosen.values()))
    return parts
