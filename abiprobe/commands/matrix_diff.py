"""``abiprobe matrix diff OLD NEW`` and ``abiprobe matrix merge``: registered by ``commands/matrix.py``.

``diff`` exit codes: 0 no verdict flipped, 4 some flipped, 12 (4|8) some went from ok to fail; 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from abiprobe import log
from abiprobe.errors import UsageError
from abiprobe.model.hosts import neutral
from abiprobe.probe.jobs import load_result, merge_results
from abiprobe.report.diff import diff_matrices, render_markdown
from abiprobe.report.jsondoc import envelope, json_text
from abiprobe.report.matrix_json import dumps, load_document
from abiprobe.store.primitives import write_text_atomic
from abiprobe.ui.console import make_console

MERGE_KIND = "abiprobe-matrix-merge"
MERGE_SCHEMA_VERSION = 1


def register_actions(msub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    diff = msub.add_parser("diff", help="new and removed wheels, flipped verdicts between two matrices")
    diff.add_argument("old", type=Path, metavar="OLD", help="the earlier matrix JSON")
    diff.add_argument("new", type=Path, metavar="NEW", help="the later matrix JSON")
    diff.add_argument("--format", choices=("text", "md", "json"), default="text", help="output format")
    diff.add_argument("--json", action="store_true", help="same as --format json")
    diff.set_defaults(func=run_diff)
    merge = msub.add_parser("merge", help="fold probe job results into matrices")
    merge.add_argument(
        "matrices",
        nargs="+",
        type=Path,
        metavar="MATRIX_OR_RESULT",
        help="matrix JSON files and probe job result files, in any order",
    )
    merge.add_argument("--out-dir", type=Path, help="write merged matrices here (default: in place)")
    merge.add_argument("--json", action="store_true", help="print what was merged as JSON")
    merge.set_defaults(func=run_merge)


def run_diff(args: argparse.Namespace) -> int:
    d = diff_matrices(load_document(args.old), load_document(args.new))
    if d.other_targets:
        log.warn(d.other_targets)
    fmt = "json" if args.json else args.format
    if fmt == "json":
        sys.stdout.write(json_text(d.to_json()))
    elif fmt == "md":
        sys.stdout.write(render_markdown(d))
    else:
        print_text(d.to_json())
    return d.exit_code


def print_text(d: dict[str, Any]) -> None:

    console = make_console()
    counts = f"{len(d['new_wheels'])} new wheels, {len(d['removed_wheels'])} removed"
    target = d["target"] if d["old_target"] == d["target"] else f"{d['old_target']} -> {d['target']}"
    console.print(f"[bold]{target}[/]: {counts}, {len(d['flips'])} verdicts flipped")
    for f in d["flips"]:
        style = "red" if f["after"] == "fail" else ("green" if f["after"] == "ok" else "yellow")
        where = f["row"] + (f" + {f['col']}" if f["col"] else "")
        console.print(
            f"  [{style}]{f['before']} -> {f['after']}[/] {where}: "
            f"{f['reason'] if f['after'] != 'ok' else 'was: ' + f['was']}",
            highlight=False,
        )
    for w in d["new_wheels"]:
        console.print(f"  [green]+[/] {w['filename']}", highlight=False)
    for w in d["removed_wheels"]:
        console.print(f"  [red]-[/] {w['filename']}", highlight=False)


def _kind(path: Path) -> str:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    return str(data.get("kind", "")) if isinstance(data, dict) else ""


def run_merge(args: argparse.Namespace) -> int:
    """Exit 0 when every result found its matrix and cell, 1 otherwise."""
    kinds = {p: _kind(p) for p in args.matrices}
    matrices = [p for p, k in kinds.items() if k == "abiprobe-matrix"]
    results = [load_result(p) for p, k in kinds.items() if k != "abiprobe-matrix"]
    if not matrices:
        raise UsageError("no matrix file given")
    placed: set[str] = set()
    report: dict[str, list[str]] = {}
    for path in matrices:
        merged, rep = merge_results(load_document(path), results)
        placed.update(rep.merged)
        report[str(path)] = list(rep.merged)
        out = (args.out_dir / path.name) if args.out_dir else path
        write_text_atomic(out, neutral(dumps(merged)))
    unmatched = [r["job"]["id"] for r in results if r["job"]["id"] not in placed]
    if args.json:
        doc = {"merged": report, "unmatched": unmatched}
        sys.stdout.write(json_text(envelope(MERGE_KIND, doc, MERGE_SCHEMA_VERSION)))
    else:
        for path_name, ids in report.items():
            print(f"{path_name}: {len(ids)} result(s) merged")
        for ident in unmatched:
            print(f"no matrix or cell for {ident}")
    return 1 if unmatched else 0
