"""Renderings of a torch diff document (``TorchDiff.to_json()``): terminal text and Markdown."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _side_rows(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    old, new = doc["old"], doc["new"]
    return [
        ("wheel", old["label"], new["label"]),
        ("exports", str(old["exports"]), str(new["exports"])),
        ("CUDA majors", _join(old["cuda_majors"]), _join(new["cuda_majors"])),
        ("CUDA sonames", _join(old["cuda_sonames"]), _join(new["cuda_sonames"])),
        ("std::string ABI", old["string_abi"], new["string_abi"]),
    ]


def _join(items: list[Any]) -> str:
    return ", ".join(str(i) for i in items) or "-"


def render_text(doc: dict[str, Any], console: Console, *, limit: int = 20) -> None:
    console.print(f"[bold]{doc['headline']}[/bold]", highlight=False)
    sides = Table(show_header=True, box=None, padding=(0, 1))
    for col in ("", doc["old"]["version"], doc["new"]["version"]):
        sides.add_column(col, overflow="fold")
    for row in _side_rows(doc):
        sides.add_row(*row)
    console.print(sides)
    if doc["namespaces"]:
        ns = Table(title="by namespace", title_justify="left", box=None, padding=(0, 1))
        for col in ("namespace", "removed", "changed", "added"):
            ns.add_column(col, overflow="fold")
        for row in doc["namespaces"][:limit]:
            ns.add_row(row["namespace"], str(row["removed"]), str(row["changed"]), str(row["added"]))
        console.print(ns)
    for title, key in (("signature changed", "changed"), ("removed", "removed"), ("added", "added")):
        entries = doc[key]
        if not entries:
            continue
        console.print(f"[bold]{title}[/bold] ({len(entries)})")
        for c in entries[:limit]:
            line = f"  {c['demangled']}  [{c['library']}]"
            if key == "changed":
                line += f"\n    now {c['replacement_demangled']}"
            console.print(line, markup=False, highlight=False)
        if len(entries) > limit:
            console.print(
                f"  ... {len(entries) - limit} more (--limit N, or --json for all)", highlight=False
            )
    kernels = doc["kernels"]
    if kernels["checked"]:
        console.print(f"[bold]known kernel wheels[/bold]: {kernels['checked']} checked", highlight=False)
        for k in kernels["broken"]:
            first = k["demangled"][0]
            more = f" (and {len(k['symbols']) - 1} more)" if len(k["symbols"]) > 1 else ""
            shown = f"{escape(k['wheel'])}: imports {escape(first)}{more}"
            console.print(f"  [red]breaks[/red] {shown}", highlight=False)


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


def render_markdown(doc: dict[str, Any], *, limit: int = 50) -> str:
    """The diff as Markdown for an upgrade ticket."""
    old, new = doc["old"]["version"], doc["new"]["version"]
    out = [
        f"## torch {old} → {new}",
        "",
        f"**{_esc(doc['headline'])}**",
        "",
        f"| | {old} | {new} |",
        "|---|---|---|",
    ]
    out += [f"| {a} | {_esc(b)} | {_esc(c)} |" for a, b, c in _side_rows(doc)]
    if doc["namespaces"]:
        out += ["", "| namespace | removed | signature changed | added |", "|---|---|---|---|"]
        out += [
            f"| `{_esc(r['namespace'])}` | {r['removed']} | {r['changed']} | {r['added']} |"
            for r in doc["namespaces"][:limit]
        ]
    for title, key in (("Signature changed", "changed"), ("Removed", "removed"), ("Added", "added")):
        entries = doc[key]
        if not entries:
            continue
        out += ["", f"### {title} ({len(entries)})", ""]
        for c in entries[:limit]:
            line = f"- `{_esc(c['demangled'])}` ({c['library']})"
            if key == "changed":
                line += f" → `{_esc(c['replacement_demangled'])}`"
            out.append(line)
        if len(entries) > limit:
            out.append(f"- … {len(entries) - limit} more")
    kernels = doc["kernels"]
    if kernels["checked"]:
        out += ["", f"### Known kernel wheels ({kernels['checked']} checked)", ""]
        out += [
            f"- ❌ {k['wheel']} imports `{_esc(k['demangled'][0])}`"
            + (f" and {len(k['symbols']) - 1} more" if len(k["symbols"]) > 1 else "")
            for k in kernels["broken"]
        ] or ["None of them imports a removed export."]
    out.append("")
    return "\n".join(out)
