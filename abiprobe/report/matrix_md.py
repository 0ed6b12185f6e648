"""The matrix document as Markdown that pastes well into a ticket: summary, grid, problems, exclusions."""

from __future__ import annotations

from collections import Counter
from typing import Any

from abiprobe.report.matrix_json import axis_ids, index_state, title_of
from abiprobe.report.reasons import COLLAPSE_AFTER, cell_reasons, problem_cells

SYMBOL = {
    "ok": "✅ ok",
    "warn": "⚠️ warn",
    "blocked": "🚧 blocked",
    "system": "🧩 needs a system library",
    "fail": "❌ fail",
    "unknown": "❔ unknown",
}


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(doc: dict[str, Any]) -> str:
    """A ticket-sized rendering of a matrix document (see ``matrix_document``)."""
    axes = doc["axes"]
    out = [f"## {title_of(doc)}", ""]
    chosen = doc["chosen"]
    if chosen:
        out.append("**Chosen set:** " + ", ".join(f"`{v}`" for v in chosen.values()))
    else:
        out.append("**No passing set.**")
        out += [f"- {_esc(c)}" for c in doc["conflicts"]]
    out += [f"- {_esc(e['explanation'])}" for e in doc.get("empty_roles", ())]
    if not doc["complete"]:
        out.append("")
        out.append(
            "> ⚠️ Incomplete: some indexes did not answer in full (see below), or a wheel could not be read, "
            "so newer candidates may be missing."
        )
    out += ["", "| index | answered |", "|---|---|"]
    for i in doc["indexes"]:
        out.append(f"| {_esc(i['url'])} | {_esc(index_state(i))} |")
    out += ["", *_grid(doc, axes), ""]
    out += provider_lines(doc)
    if doc.get("twins"):
        out += ["### Same filename, other sha256", *(f"- {_esc(t['explanation'])}" for t in doc["twins"]), ""]
    out += problem_lines(doc)
    out += override_lines(doc.get("if_pins_overridden"))
    if doc["near_misses"]:
        out.append("### Near misses")
        out += [f"- `{n['id']}`: {_esc(n['reason'])}" for n in doc["near_misses"]]
        out.append("")
    out += excluded_lines(doc["excluded"])
    s = doc["stats"]
    out.append(
        f"<sub>{s['cells']} cells from {s['analyses']} pair analyses "
        f"(a naive loop: {s['naive_analyses']}); {doc['generated_by']}</sub>"
    )
    return "\n".join(out) + "\n"


def problem_lines(doc: dict[str, Any]) -> list[str]:
    """Each cell that is not ok, failures first, with every reason (collapsed when there are many)."""
    cells = problem_cells(doc)
    if not cells:
        return []
    out = ["### Problems", ""]
    for c in cells:
        where = " × ".join(x for x in (c["row"], c["col"]) if x)
        reasons = cell_reasons(doc, c) or [
            {"check": "", "status": c["status"], "explanation": c["explanation"]}
        ]
        items = [
            f"  - {r['status']} {r['check']}: {_esc(r['explanation'])}".replace(" :", ":") for r in reasons
        ]
        head = f"- **{_esc(where)}** ({SYMBOL[c['status']]})"
        if len(items) > COLLAPSE_AFTER:
            out += [
                head,
                f"  <details><summary>{len(items)} reasons</summary>",
                "",
                *items,
                "",
                "  </details>",
            ]
        else:
            out += [head, *items]
    out.append("")
    return out


def override_lines(override: dict[str, Any] | None) -> list[str]:
    """The newest set that loads if declared pins were overridden, and the two ways to install it."""
    if not override:
        return []
    out = ["### If declared pins were overridden", ""]
    out.append(
        "**Newest set the loader checks pass for:** "
        + ", ".join(f"`{v}`" for v in override["chosen"].values())
    )
    out += [f"- blocked by `{b['by']}` requiring `{b['requirement']}` (the set has {b['found']})"
            for b in override["blocked_by"]]  # fmt: skip
    out += [
        "",
        "uv:",
        "```sh",
        *override["uv"],
        "```",
        "pip (in this order):",
        "```sh",
        *override["pip"],
        "```",
        "",
    ]
    return out


def _grid(doc: dict[str, Any], axes: dict[str, Any]) -> list[str]:
    rows, cols = axis_ids(doc)
    cells = {(c["row"], c["col"]): c for c in doc["cells"]}
    head = [f"{axes['rows']} \\ {axes['cols'] or ''}", *[c or "" for c in cols]]
    lines = ["| " + " | ".join(_esc(h) for h in head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        row = [f"`{r}`"]
        for col in cols:
            cell = cells.get((r, col))
            if cell is None:
                row.append("")
                continue
            extra = "".join(f" +{ch['chosen']}" for ch in cell["choices"] if ch["chosen"])
            row.append(SYMBOL[cell["status"]] + _esc(extra))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def provider_lines(doc: dict[str, Any]) -> list[str]:
    """Which per-architecture provider each group's shim loads on the target, and why (or why none)."""
    lines = [
        f"- `{g['id']}` + {p['shim']}: "
        + (f"**{p['chosen']}**, {_esc(p['reason'])}" if p["chosen"] else f"no provider: {_esc(p['reason'])}")
        for groups in doc["groups"].values()
        for g in groups
        for p in g.get("providers", ())
    ]
    return ["### Providers", *lines, ""] if lines else []


def excluded_lines(excluded: list[dict[str, str]]) -> list[str]:
    """Wheels that were no candidates: each other reason once, tag and pre-release misses counted."""
    if not excluded:
        return []
    tags = Counter(e["role"] for e in excluded if e["check"] == "tags")
    pre = Counter(e["role"] for e in excluded if e["reason"].startswith("pre-release"))
    other = [e for e in excluded if e["check"] != "tags" and not e["reason"].startswith("pre-release")]
    out = ["### Not candidates"]
    seen: set[tuple[str, str]] = set()
    for e in other:
        key = (e["name"], e["version"])
        if key in seen:
            continue
        seen.add(key)
        out.append(f"- `{e['name']} {e['version']}`: {_esc(e['reason'])}")
    for role, n in sorted(pre.items()):
        out.append(f"- {n} {role} pre-release wheel(s) (use --pre)")
    for role, n in sorted(tags.items()):
        out.append(f"- {n} {role} wheel(s) for other Python versions or platforms")
    out.append("")
    return out
