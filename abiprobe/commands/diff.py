"""`abiprobe diff OLD NEW`: what changed between two torch releases, and which known kernels it breaks.

OLD and NEW are each ``torch==VERSION`` (from the configured indexes, cache first), a torch wheel file or
URL, an unpacked directory, or the path of a Python interpreter whose environment has torch installed.

Exit status: 0 no export of OLD is gone from NEW; 4 some export was removed or changed its signature;
12 (4|8) and a kernel wheel abiprobe knows (its facts are in the cache) imports one; 1 error, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from abiprobe.analyze.torch_diff import TorchDiff, diff_torch
from abiprobe.commands.known_wheels import cached_kernels, torch_facts_of
from abiprobe.commands.options import add_index_options, add_target_options
from abiprobe.report.jsondoc import envelope, json_text
from abiprobe.store.primitives import write_text_atomic

_EPILOG = (
    "exit status: 0 nothing removed; 4 exports removed or changed; 12 and a known kernel wheel imports one; "
    "1 error; 2 usage."
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "diff",
        help="what changed between two torch releases: exports, CUDA sonames, string ABI, broken kernels",
        description="Compare the exports of two torch releases (torch==A torch==B, two wheels, two unpacked "
        "directories or two Python interpreters with torch installed).",
        epilog=_EPILOG,
    )
    p.add_argument("old", metavar="OLD", help="torch==VERSION, a torch wheel/URL/directory, or a python path")
    p.add_argument("new", metavar="NEW", help="the release to compare against, in any form OLD takes")
    p.add_argument("--format", choices=("text", "json", "md"), default="text", help="output format")
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.add_argument("-o", "--output", type=Path, help="write the output here (default: stdout)")
    p.add_argument("--limit", type=int, default=20, help="entries listed per section in text/md (default 20)")
    p.add_argument(
        "--no-kernels",
        action="store_true",
        help="do not check the kernel wheels whose facts are in the cache",
    )
    add_target_options(
        p,
        python_help="target Python whose torch wheels torch==VERSION picks (3.12; default: this host's)",
        cuda=False,
        arch=False,
        driver=False,
    )
    add_index_options(p, index_help="index to look torch==VERSION up in (repeatable)")
    p.set_defaults(func=run)


def exit_code(diff: TorchDiff) -> int:
    code = 4 if diff.removed or diff.changed else 0
    if any(k.symbols for k in diff.kernels):
        code |= 8
    return code


def run(args: argparse.Namespace) -> int:
    from abiprobe.commands.items import ItemSource

    target = None
    if args.python is not None or args.platform is not None:  # else the wheels this host would get
        from abiprobe.commands.options import target_of

        target = target_of(args)
    with ItemSource.of(args, progress=False) as source:
        old = torch_facts_of(args.old, source, target)
        new = torch_facts_of(args.new, source, target)
    kernels = [] if args.no_kernels else cached_kernels(args.cache_dir)
    diff = diff_torch(old, new, kernels)
    doc = diff.to_json()
    fmt = "json" if args.json else args.format
    if fmt == "json":
        text = json_text(envelope(str(doc["kind"]), doc))
    elif fmt == "md":
        from abiprobe.report.torch_diff_text import render_markdown

        text = render_markdown(doc, limit=args.limit)
    else:
        from abiprobe.report.torch_diff_text import render_text
        from abiprobe.ui.console import make_console

        if args.output is None:
            render_text(doc, make_console(), limit=args.limit)
            return exit_code(diff)
        import io

        from rich.console import Console

        stream = io.StringIO()
        render_text(doc, Console(file=stream, width=160), limit=args.limit)
        write_text_atomic(args.output, stream.getvalue())
        return exit_code(diff)
    if args.output is not None:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return exit_code(diff)
