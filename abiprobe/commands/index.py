"""`abiprobe index ls PROJECT`: the candidates of a project as abiprobe sees them, index by index."""

from __future__ import annotations

import argparse
import sys

from abiprobe.commands.options import add_index_options
from abiprobe.errors import UsageError
from abiprobe.index.client import DEFAULT_STALE_AFTER, IndexClient
from abiprobe.index.config import STRATEGIES, load_index_config
from abiprobe.net.http import Http, display_url
from abiprobe.report.index_text import render_listing
from abiprobe.report.jsondoc import envelope, json_text
from abiprobe.store.cache import Cache
from abiprobe.ui.console import print_all

INDEX_LS_SCHEMA_VERSION = 1
INDEX_LS_KIND = "abiprobe-index-listing"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("index", help="read package indexes", description="Read package indexes.")
    actions = p.add_subparsers(dest="index_action", metavar="ACTION")
    ls = actions.add_parser(
        "ls",
        help="list a project's wheels as abiprobe sees them",
        description="Indexes come from --index, then $ABIPROBE_INDEX_URL / $ABIPROBE_EXTRA_INDEX_URL, then "
        "abiprobe.toml or [tool.abiprobe] in pyproject.toml, then the installer's configuration (pip's, "
        "else uv's; `abiprobe config` shows what is read and from where).",
    )
    ls.add_argument("project", help="project name (any spelling: it is normalized)")
    add_index_options(ls)
    ls.add_argument("--strategy", dest="index_strategy", choices=STRATEGIES, help=argparse.SUPPRESS)
    ls.add_argument("--find-links", action="append", default=[], metavar="URL", help="flat page of links")
    ls.add_argument("--pin", action="append", default=[], metavar="PROJECT=INDEX", help="pin a project")
    ls.add_argument(
        "--stale-after",
        type=float,
        default=DEFAULT_STALE_AFTER / 3600,
        metavar="HOURS",
        help="a cached page older than this is marked stale when it has to be used",
    )
    ls.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_ls)
    p.set_defaults(func=lambda _args: _usage(p))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _pins(values: list[str]) -> dict[str, str]:
    pins: dict[str, str] = {}
    for value in values:
        project, sep, index = value.partition("=")
        if not sep or not project.strip() or not index.strip():
            raise UsageError(f"--pin takes PROJECT=INDEX, got {value!r}")
        pins[project.strip()] = index.strip()
    return pins


def run_ls(args: argparse.Namespace) -> int:
    config = load_index_config(
        cli_indexes=args.index,
        cli_extra_indexes=args.extra_index,
        cli_find_links=args.find_links,
        cli_strategy=args.index_strategy,
        cli_pins=_pins(args.pin),
    )
    cache = None if args.no_cache else Cache(args.cache_dir)
    with Http(progress=not args.json) as http:
        client = IndexClient(
            config.sources, cache, http, args.offline,
            strategy=config.strategy, pins=config.pins, stale_after=args.stale_after * 3600,
        )  # fmt: skip
        listing = client.list_project(args.project)
    if args.json:
        sys.stdout.write(json_text(envelope(INDEX_LS_KIND, listing.to_json(), INDEX_LS_SCHEMA_VERSION)))
    else:
        print_all(render_listing(listing))
    links = {display_url(s.url) for s in config.sources if s.kind == "find-links"}
    if listing.candidates or any(o.status == "ok" and o.url not in links for o in listing.outcomes):
        return 0  # listed, or an index has the project but no wheel of it is usable (a find-links page
        # answers for every project, so it says nothing about this one)
    if listing.failed:
        from abiprobe import log
        from abiprobe.report.incomplete import incomplete_line

        log.error(incomplete_line((), [o.index for o in listing.failed]))
        return 3
    asked = ", ".join(o.index for o in listing.outcomes) or "no index configured"
    print(f"abiprobe: error: no index has a project named {args.project!r} (asked: {asked})", file=sys.stderr)
    return 1
