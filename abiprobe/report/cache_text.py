"""Rich rendering of the ``abiprobe cache info|prune|verify`` documents (their ``--json`` bodies)."""

from __future__ import annotations

import datetime
from typing import Any

from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _when(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render_info(doc: dict[str, Any]) -> list[RenderableType]:
    """Entries and bytes per kind, the oldest and newest page, unfinished writes."""
    state = "" if doc["exists"] else " (does not exist yet)"
    parts: list[RenderableType] = [f"cache: [bold]{escape(doc['root'])}[/bold]{state}"]
    table = Table("kind", "entries", "size")
    for kind, stats in doc["kinds"].items():
        table.add_row(kind, str(stats["count"]), human_bytes(stats["bytes"]))
    table.add_row("[bold]total[/bold]", "", f"[bold]{human_bytes(doc['total_bytes'])}[/bold]")
    parts.append(table)
    oldest, newest = doc["oldest_page"], doc["newest_page"]
    if oldest is not None and newest is not None:
        parts.append(f"oldest page: {_when(oldest['fetched_at'])}  {escape(oldest['url'])}")
        parts.append(f"newest page: {_when(newest['fetched_at'])}  {escape(newest['url'])}")
    if doc.get("published_facts"):
        parts.append(
            f"{doc['published_facts']} of the facts entries came from published facts (their wheel's sha256 "
            "checked by the publisher, not here)"
        )
    if doc["temp_files"]:
        parts.append(f"{doc['temp_files']} unfinished write(s) left behind; `abiprobe cache verify --repair`")
    return parts


def render_prune(doc: dict[str, Any]) -> list[RenderableType]:
    if not doc["removed"]:
        return [f"nothing to prune in {escape(doc['root'])}"]
    table = Table("kind", "removed")
    for kind, count in doc["removed"].items():
        table.add_row(kind, str(count))
    return [table, f"freed {human_bytes(doc['freed_bytes'])} in {escape(doc['root'])}"]


def render_verify(doc: dict[str, Any]) -> list[RenderableType]:
    checked = ", ".join(f"{count} {kind}" for kind, count in doc["checked"].items() if count)
    parts: list[RenderableType] = [f"checked {checked or 'nothing'} in {escape(doc['root'])}"]
    problems = doc["problems"]
    if problems:
        table = Table("problem", "entry", "reason", "removed")
        for problem in problems:
            table.add_row(
                problem["kind"],
                escape(problem["path"]),
                escape(problem["reason"]),
                "yes" if problem["removed"] else "no",
            )
        parts.append(table)
    unverified = [p for p in problems if p["kind"] == "unverified"]
    if unverified:
        parts.append(
            f"{len(unverified)} wheel entries were read by range and never checked against the "
            "wheel's sha256: they are used only while the server serves the same zip directory"
        )
    corrupt = sum(1 for p in problems if p["kind"] == "corrupt")
    if doc["ok"]:
        parts.append("[green]all entries intact[/green]")
    elif doc["repaired"]:
        parts.append(f"[yellow]removed {_entries(corrupt)}; they will be fetched again[/yellow]")
    else:
        parts.append(f"[red]{_entries(corrupt)}[/red]; run with --repair to drop them")
    return parts


def _entries(count: int) -> str:
    return f"{count} damaged {'entry' if count == 1 else 'entries'}"
