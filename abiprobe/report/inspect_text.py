"""Rich rendering of an inspect document: one table per library or extension."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from abiprobe.model.cxxnames import demangle_many

_STATUS_STYLE = {"native": "green", "jit": "yellow", "none": "red"}


def _version_needs(obj: dict[str, Any]) -> str:
    parts = []
    for need in obj["version_needs"]:
        versions = need["versions"]
        newest = ", ".join(_newest_per_family(versions))
        parts.append(f"{need['file']}: {newest}")
    return "\n".join(parts) or "-"


def _newest_per_family(versions: list[str]) -> list[str]:
    """GLIBC_2.2.5, GLIBC_2.34, GLIBCXX_3.4.30 -> the highest of each family."""
    best: dict[str, tuple[tuple[int, ...], str]] = {}
    for v in versions:
        family, _, num = v.rpartition("_")
        try:
            key = tuple(int(x) for x in num.split("."))
        except ValueError:
            family, key = v, ()
        if family not in best or key > best[family][0]:
            best[family] = (key, v)
    return sorted(v for _, v in best.values())


def render_inspect(doc: dict[str, Any], console: Console, *, show_symbols: bool = False) -> None:
    for source in doc["sources"]:
        meta = source["metadata"]
        title = f"{meta['name']} {meta['version']}" if meta else source["filename"]
        console.print(f"[bold]{title}[/bold]  ({source['kind']}: {source['filename']})")
        if meta and meta["requires_dist"]:
            console.print("  requires: " + "; ".join(meta["requires_dist"]))
        if source.get("torch_range"):
            _print_torch_range(console, source["torch_range"])
        if source.get("variants"):
            _print_variants(console, source["variants"])
        if not source["objects"]:
            console.print("  no ELF objects")
        for obj in source["objects"]:
            console.print(_object_table(obj))
            if show_symbols:
                _print_symbols(console, obj)
        for err in source["errors"]:
            console.print(f"[red]error:[/red] {escape(str(err))}")


_RANGE_STYLE = {"agrees": "green", "too loose": "red", "too tight": "yellow", "unknown": "white"}


def _print_torch_range(console: Console, r: dict[str, Any]) -> None:
    """ABI kind, the range the bytes allow, the declared constraint and the verdict."""
    declared = "none" if r["declared"] is None else (f"torch{r['declared']}" if r["declared"] else "torch")
    style = _RANGE_STYLE.get(r["verdict"], "white")
    console.print(f"  torch ABI: {r['kind']}; range from its bytes: {r['range']}", highlight=False)
    console.print(
        f"  declared: {declared}; verdict [{style}]{r['verdict']}[/{style}]: {r['reason']}", highlight=False
    )


def _print_variants(console: Console, v: dict[str, Any]) -> None:
    """The variant properties the bytes support (plugin vocabulary), and claims they contradict."""
    supported = "; ".join(f"{k}: {', '.join(vals)}" for k, vals in v["supported"].items())
    if supported:
        console.print(f"  variant properties its bytes support (nvidia): {supported}", highlight=False)
    if v["claimed"] is not None:
        claimed = (
            "; ".join(f"{k}: {', '.join(vals)}" for k, vals in v["claimed"].items()) or "none for this label"
        )
        console.print(f"  variant.json claims: {claimed}", highlight=False)
    for c in v["contradicted"]:
        console.print(f"  [red]contradicted[/red] {c['feature']} {c['value']}: {c['why']}", highlight=False)


def _object_table(obj: dict[str, Any]) -> Table:
    t = Table(title=obj["path"], title_justify="left", show_header=False, box=None, padding=(0, 1))
    t.add_column(style="bold cyan", no_wrap=True)
    t.add_column()
    t.add_row("type", f"ELF{obj['elf_class']} {obj['machine']} {obj['elf_type']}")
    if obj["soname"]:
        t.add_row("soname", obj["soname"])
    t.add_row("needed", ", ".join(obj["needed"]) or "-")
    if obj["rpath"]:
        t.add_row("rpath", ":".join(obj["rpath"]))
    if obj["runpath"]:
        t.add_row("runpath", ":".join(obj["runpath"]))
    weak = sum(1 for i in obj["imports"] if i["weak"])
    t.add_row("imports", f"{len(obj['imports'])} ({weak} weak)")
    t.add_row("exports", str(len(obj["exports"])))
    t.add_row("version needs", _version_needs(obj))
    if obj["cuda_majors"]:
        t.add_row("CUDA major", ", ".join(str(m) for m in obj["cuda_majors"]) + " (from sonames)")
    if obj["gpu_summary"]:
        t.add_row("GPU code", ", ".join(f"{k} x{n}" if n > 1 else k for k, n in obj["gpu_summary"].items()))
    verdict = obj.get("arch_verdict")
    if verdict:
        style = _STATUS_STYLE.get(verdict["status"], "white")
        t.add_row(
            f"on {verdict['arch']}", f"[{style}]{verdict['status']}[/{style}]: {verdict['explanation']}"
        )
    return t


def _print_symbols(console: Console, obj: dict[str, Any]) -> None:
    names = [i["name"] for i in obj["imports"]] + [e["name"] for e in obj["exports"]]
    readable = demangle_many(names)
    for i in obj["imports"]:
        ver = f"@{i['version']}" if i["version"] else ""
        console.print(
            f"  U {'w ' if i['weak'] else ''}{readable.get(i['name'], i['name'])}{ver}", markup=False
        )
    for e in obj["exports"]:
        ver = (("@@" if e["default"] else "@") + e["version"]) if e["version"] else ""
        console.print(f"  D {readable.get(e['name'], e['name'])}{ver}", markup=False)
