"""``abiprobe snapshot``: record an environment before an upgrade (distributions, sources, binaries)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from abiprobe.host.snapshot import take_snapshot
from abiprobe.report.jsondoc import json_text
from abiprobe.store.primitives import write_text_atomic


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("snapshot", help="record an environment (distributions, binaries) before an upgrade")
    p.add_argument("--python", help="interpreter of the environment (default: this one)")
    p.add_argument(
        "--wheels-dir",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="where the installed wheel files may be found (repeatable; searched recursively): "
        "their sha256 makes the restore plan hash-checked",
    )
    p.add_argument("-o", "--output", type=Path, help="write the snapshot JSON here (default: stdout)")
    p.add_argument("--json", action="store_true", help="print the snapshot JSON (the default without -o)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    snap = take_snapshot(args.python, args.wheels_dir)
    text = json_text(snap.to_json())
    if args.output is not None:
        write_text_atomic(args.output, text)
    if args.output is None or args.json:
        sys.stdout.write(text)
    else:
        hashed = sum(1 for d in snap.dists if d.wheel is not None)
        exts = sum(len(d.extensions) for d in snap.dists)
        print(
            f"{args.output}: {len(snap.dists)} distributions ({hashed} with a known wheel sha256), "
            f"{exts} ELF objects, Python {snap.python}"
        )
    return 0
