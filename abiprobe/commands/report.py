"""``abiprobe report``: the upgrade ticket from a snapshot and a solve (Markdown, HTML or JSON)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from abiprobe import log
from abiprobe.errors import UsageError
from abiprobe.host.snapshot import load_snapshot
from abiprobe.model.snapshot import Snapshot
from abiprobe.probe.jobs import load_result
from abiprobe.report.jsondoc import json_text
from abiprobe.report.matrix_json import load_document
from abiprobe.report.ticket import render_markdown, ticket_document
from abiprobe.report.ticket_html import render_html
from abiprobe.report.torch_upgrade import torch_change, torch_upgrade
from abiprobe.store.cache import Cache
from abiprobe.store.primitives import write_text_atomic


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", help="the upgrade ticket: changes, chosen and rejected sets, probes")
    p.add_argument("--snapshot", type=Path, required=True, help="`abiprobe snapshot` file (where we are)")
    p.add_argument("--matrix", type=Path, required=True, help="matrices/<key>.json (where we go)")
    p.add_argument("--lock", type=Path, help="lock file (default: <matrix stem>.lock.txt next to the matrix)")
    p.add_argument(
        "--probe",
        action="append",
        default=[],
        type=Path,
        metavar="RESULT",
        help="probe job result files (repeatable)",
    )
    p.add_argument("--installer", choices=("pip", "uv"), default="pip", help="installer of the restore plan")
    p.add_argument("--format", choices=("md", "html", "json"), default="md", help="output format")
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.add_argument("-o", "--output", type=Path, help="write the report here (default: stdout)")
    p.add_argument(
        "--cache-dir", type=Path, help="wheel_index_cache directory (the torch diff, when torch changes)"
    )
    p.set_defaults(func=run)


def _torch_upgrade(
    snapshot: Snapshot, doc: dict[str, Any], lock: str | None, cache_dir: Path | None
) -> dict[str, Any] | None:
    """The torch diff section, when the upgrade changes torch: the facts of both torches as an offline read
    takes them from the cache (the old one else from the wheel file the snapshot found), and the kernel
    wheels the cache knows."""
    change = torch_change(snapshot, doc, lock)
    if change is None:
        return None
    from abiprobe.store.reads import cached_wheel_facts, stored_facts

    cache = Cache(cache_dir, readonly=True)
    new = stored_facts(cache, change.new_sha256) if change.new_sha256 else None
    old = stored_facts(cache, change.old_sha256) if change.old_sha256 else None
    if old is None and change.old_path and Path(change.old_path).is_file():
        from abiprobe.model.stack import default_stack

        old = cached_wheel_facts(
            Path(change.old_path), cache, unread_sources=default_stack().unread_sources()
        )
    if old is None or new is None:
        return torch_upgrade(change, old, new, ())
    from abiprobe.commands.known_wheels import cached_kernels

    return torch_upgrade(change, old, new, cached_kernels(cache_dir))


def run(args: argparse.Namespace) -> int:
    snapshot = load_snapshot(args.snapshot)
    doc = load_document(args.matrix)
    lock_path: Path = args.lock or args.matrix.with_name(args.matrix.name.removesuffix(".json") + ".lock.txt")
    if args.lock is not None and not lock_path.is_file():
        raise UsageError(f"{lock_path} does not exist")
    lock = lock_path.read_text(encoding="utf-8") if lock_path.is_file() else None
    results = [load_result(p) for p in args.probe]
    upgrade = _torch_upgrade(snapshot, doc, lock, args.cache_dir)
    ticket = ticket_document(
        snapshot, doc, lock=lock, results=results, installer=args.installer, torch_upgrade=upgrade
    )
    for mismatch in ticket["mismatches"]:
        log.warn(mismatch)
    fmt = "json" if args.json else args.format
    if fmt == "json":
        text = json_text(ticket)
    elif fmt == "html":
        text = render_html(ticket)
    else:
        text = render_markdown(ticket)
    if args.output is not None:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0
