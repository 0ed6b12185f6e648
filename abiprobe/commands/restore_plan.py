"""``abiprobe restore-plan SNAPSHOT``: the pip / uv commands that put a snapshotted environment back.

Exit codes: 0; with ``--verify PYTHON``, 1 when that environment differs from the snapshot.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from abiprobe.host.snapshot import load_snapshot, take_snapshot
from abiprobe.report.jsondoc import envelope, json_text
from abiprobe.report.restore import compare, render_script, restore_plan

PLAN_KIND = "abiprobe-restore-plan"
VERIFY_KIND = "abiprobe-restore-verification"
RESTORE_SCHEMA_VERSION = 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("restore-plan", help="print the commands that restore a snapshotted environment")
    p.add_argument("snapshot", type=Path, metavar="SNAPSHOT", help="an `abiprobe snapshot` file")
    p.add_argument(
        "--installer",
        choices=("pip", "uv"),
        default="pip",
        help="which installer's commands run; the other's are shown as comments",
    )
    p.add_argument(
        "--against",
        metavar="PYTHON",
        help="environment to restore: what it has beyond the snapshot is removed",
    )
    p.add_argument(
        "--no-index",
        action="store_true",
        help="install only from the snapshot's wheel directories (no index)",
    )
    p.add_argument(
        "--verify",
        metavar="PYTHON",
        help="instead of a plan: check that PYTHON's environment matches the snapshot",
    )
    p.add_argument("--json", action="store_true", help="print the plan (or the verification) as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    snap = load_snapshot(args.snapshot)
    if args.verify:
        problems = compare(snap, take_snapshot(args.verify))
        if args.json:
            doc = {"matches": not problems, "problems": problems}
            sys.stdout.write(json_text(envelope(VERIFY_KIND, doc, RESTORE_SCHEMA_VERSION)))
        else:
            for line in problems:
                print(line)
            print("matches the snapshot" if not problems else f"{len(problems)} differences")
        return 1 if problems else 0
    current = take_snapshot(args.against) if args.against else None
    plan = restore_plan(snap, current)
    if args.json:
        sys.stdout.write(json_text(envelope(PLAN_KIND, plan.to_json(), RESTORE_SCHEMA_VERSION)))
    else:
        sys.stdout.write(render_script(plan, args.installer, no_index=args.no_index))
    return 0
