"""``abiprobe matrix show FILE``: render a saved matrix document (JSON) as a table, Markdown, HTML or JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from abiprobe.report.matrix_html import render_html
from abiprobe.report.matrix_json import dumps, load_document
from abiprobe.report.matrix_md import render_markdown
from abiprobe.report.matrix_text import render_table
from abiprobe.ui.console import print_all


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("matrix", help="show saved solve matrices")
    msub = p.add_subparsers(dest="matrix_command", metavar="ACTION")
    show = msub.add_parser("show", help="render a matrices/<key>.json file")
    show.add_argument("file", type=Path, help="a matrices/<key>.json file")
    show.add_argument(
        "--format", choices=("table", "md", "html", "json"), default="table", help="output format"
    )
    show.add_argument("--json", action="store_true", help="same as --format json")
    show.set_defaults(func=run_show)
    from abiprobe.commands.matrix_diff import register_actions

    register_actions(msub)


def run_show(args: argparse.Namespace) -> int:
    doc = load_document(args.file)
    fmt = "json" if args.json else args.format
    if fmt == "json":
        sys.stdout.write(dumps(doc))
    elif fmt == "md":
        sys.stdout.write(render_markdown(doc))
    elif fmt == "html":
        sys.stdout.write(render_html(doc))
    else:
        print_all(render_table(doc))
    return 0
