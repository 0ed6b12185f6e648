"""`abiprobe cache info|prune|verify`: look after the wheel_index_cache directory."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from abiprobe.errors import UsageError
from abiprobe.store.cache import Cache, CacheInfo, PruneReport, VerifyReport
from abiprobe.ui.console import make_console

CACHE_REPORT_SCHEMA_VERSION = 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cache",
        help="show, verify or prune the wheel index cache",
        description="The cache holds index pages (revalidated with ETag / Last-Modified), wheel facts "
        "keyed by sha256, and PEP 658 metadata. Default location: $ABIPROBE_CACHE_DIR, else "
        "wheel_index_cache/ of the repository when it exists, else the user cache directory.",
    )
    actions = p.add_subparsers(dest="cache_action", metavar="ACTION")

    info = actions.add_parser("info", help="count entries and bytes per kind")
    _common(info)
    info.set_defaults(func=run_info)

    prune = actions.add_parser(
        "prune", help="delete index pages (and with --facts, facts, verdicts and metadata)"
    )
    _common(prune)
    prune.add_argument("--older-than", type=float, metavar="DAYS", help="only entries older than DAYS days")
    prune.add_argument(
        "--facts",
        action="store_true",
        help="also prune wheel facts, their summaries, stored verdicts and core metadata",
    )
    prune.set_defaults(func=run_prune)

    verify = actions.add_parser("verify", help="check every entry's integrity (exit 1 when any is damaged)")
    _common(verify)
    verify.add_argument("--repair", action="store_true", help="delete damaged entries and leftovers")
    verify.set_defaults(func=run_verify)

    p.set_defaults(func=lambda args: _usage(p))


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cache-dir", type=Path, help="cache directory (default: see `abiprobe cache -h`)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def run_info(args: argparse.Namespace) -> int:
    info = Cache(args.cache_dir, readonly=True).info()
    if args.json:
        _dump("info", info.to_json())
    else:
        render_info(info, make_console())
    return 0


def run_prune(args: argparse.Namespace) -> int:
    if args.older_than is not None and args.older_than < 0:
        raise UsageError("--older-than takes a number of days, 0 or more")
    report = Cache(args.cache_dir).prune(older_than_days=args.older_than, pages=True, facts=args.facts)
    if args.json:
        _dump("prune", report.to_json())
    else:
        render_prune(report, make_console())
    return 0


def run_verify(args: argparse.Namespace) -> int:
    report = Cache(args.cache_dir, readonly=not args.repair).verify(repair=args.repair)
    if args.json:
        _dump("verify", report.to_json())
    else:
        render_verify(report, make_console())
    return 0 if report.ok or report.repaired else 1


def _dump(action: str, body: dict[str, Any]) -> None:
    doc = {"schema_version": CACHE_REPORT_SCHEMA_VERSION, "action": action, **body}
    json.dump(doc, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def _when(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment, tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render_info(info: CacheInfo, console: Console) -> None:
    state = "" if info.exists else " (does not exist yet)"
    console.print(f"cache: [bold]{info.root}[/bold]{state}")
    table = Table("kind", "entries", "size")
    for kind, stats in info.kinds.items():
        table.add_row(kind, str(stats.count), human_bytes(stats.bytes))
    table.add_row("[bold]total[/bold]", "", f"[bold]{human_bytes(info.total_bytes)}[/bold]")
    console.print(table)
    if info.oldest_page is not None and info.newest_page is not None:
        console.print(f"oldest page: {_when(info.oldest_page.fetched_at)}  {info.oldest_page.url}")
        console.print(f"newest page: {_when(info.newest_page.fetched_at)}  {info.newest_page.url}")
    if info.temp_files:
        console.print(f"{info.temp_files} unfinished write(s) left behind; `abiprobe cache verify --repair`")


def render_prune(report: PruneReport, console: Console) -> None:
    if not report.removed:
        console.print(f"nothing to prune in {report.root}")
        return
    table = Table("kind", "removed")
    for kind, count in report.removed.items():
        table.add_row(kind, str(count))
    console.print(table)
    console.print(f"freed {human_bytes(report.freed_bytes)} in {report.root}")


def render_verify(report: VerifyReport, console: Console) -> None:
    checked = ", ".join(f"{count} {kind}" for kind, count in report.checked.items() if count)
    console.print(f"checked {checked or 'nothing'} in {report.root}")
    if report.problems:
        table = Table("problem", "entry", "reason", "removed")
        for problem in report.problems:
            table.add_row(problem.kind, problem.path, problem.reason, "yes" if problem.removed else "no")
        console.print(table)
    if report.unverified:
        console.print(
            f"{len(report.unverified)} wheel entries were read by range and never checked against the "
            "wheel's sha256: they are used only while the server serves the same zip directory"
        )
    if report.ok:
        console.print("[green]all entries intact[/green]")
    elif report.repaired:
        console.print(f"[yellow]removed {_entries(len(report.corrupt))}; they will be fetched again[/yellow]")
    else:
        console.print(f"[red]{_entries(len(report.corrupt))}[/red]; run with --repair to drop them")


def _entries(count: int) -> str:
    return f"{count} damaged {'entry' if count == 1 else 'entries'}"
