"""The files a solve writes: the matrix (JSON for committing, Markdown and HTML for reading), the
requirements lock and the PEP 751 pylock, as texts the CLI writes atomically (a reader never sees half a
file).

Committed JSON keeps the registry host tokens (abiprobe.model.hosts); Markdown and HTML say them in words
(they are committed too, and name no registry host); the pylock an installer reads carries the real
hosts of this machine's configuration, so it is kept out of version control (.gitignore) and the nightly
publishes it as an artifact.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abiprobe.model.hosts import concrete, neutral, readable
from abiprobe.report.matrix_html import render_html
from abiprobe.report.matrix_json import dumps
from abiprobe.report.matrix_md import render_markdown
from abiprobe.report.pylock import pylock_document, pylock_name, render_pylock
from abiprobe.solve.candidates import StackCandidate
from abiprobe.solve.lock import locked_wheels, render_lock
from abiprobe.solve.result import SolveResult


@dataclass(frozen=True)
class LockSet:
    """The whole install of the chosen set and a note when it could not be completed."""

    wheels: list[StackCandidate]
    note: str = ""


def lock_set(result: SolveResult) -> LockSet | None:
    """Stack wheels, the runtime wheels torch pins, then the rest of the install (a solve without runtime
    wheels: the stack wheels alone); None when no set was chosen."""
    chosen = result.chosen_ids
    if chosen is None:
        return None
    install = result.install(chosen)
    return LockSet(list(install.wheels), install.note)


def chosen_table(doc: Mapping[str, Any], note: str = "") -> dict[str, Any]:
    """``[tool.abiprobe]``: the target, the chosen set, and the verdicts of its cell that chose it."""
    chosen: dict[str, str] = dict(doc.get("chosen") or {})
    axes = doc["axes"]
    cell = next(
        (
            c
            for c in doc["cells"]
            if c["row"] == chosen.get(axes["rows"]) and c["col"] == chosen.get(axes["cols"])
        ),
        None,
    )
    verdicts: list[dict[str, Any]] = []
    if cell is not None:
        for pid in cell["pairs"]:
            verdicts += doc["pairs"][pid]["verdicts"]
        verdicts += cell["set_verdicts"]
    table: dict[str, Any] = {
        "target": {k: v for k, v in doc["target"].items() if v is not None},
        "chosen": chosen,
        "status": cell["status"] if cell is not None else None,
        "checks": dict(cell["checks"]) if cell is not None else {},
        "note": note or None,
        "verdicts": [
            {k: v[k] for k in ("check", "status", "subject", "explanation") if v.get(k) is not None}
            for v in verdicts
        ],
    }
    return table


def readable_renderings(doc: dict[str, Any]) -> tuple[str, str]:
    """The Markdown and HTML files of a matrix, registry hosts in words
    (:func:`abiprobe.model.hosts.readable`)."""
    return readable(neutral(render_markdown(doc))), readable(neutral(render_html(doc)))


def output_files(
    out: Path,
    name: str,
    result: SolveResult,
    doc: dict[str, Any],
    *,
    lock_path: Path | None = None,
    find_links: Collection[str] = (),
    unchanged: Callable[[Path, str], bool] | None = None,
) -> dict[Path, str]:
    """The text of ``<name>.json`` / ``.md`` / ``.html``, ``<name>.lock.txt`` and ``pylock.<name>.toml``
    under ``out``, in the order they are to be written (the CLI writes each atomically). ``unchanged(path,
    text)``: whether ``path`` holds ``text`` already (a pylock written and checked by an earlier solve is
    not checked again)."""
    markdown, html = readable_renderings(doc)
    files = {
        out / f"{name}.json": neutral(dumps(doc)),
        out / f"{name}.md": markdown,
        out / f"{name}.html": html,
    }
    locked = lock_set(result)
    if locked is None:
        return files
    target = result.matrix.target
    files[lock_path or out / f"{name}.lock.txt"] = render_lock(
        locked_wheels(locked.wheels), target, note=locked.note
    )
    pylock = pylock_document(locked.wheels, target, chosen_table(doc, locked.note), find_links=find_links)
    path = out / pylock_name(name)
    checked = None if unchanged is None else (lambda text: unchanged(path, concrete(text)))
    files[path] = concrete(render_pylock(pylock, checked=checked))
    return files
