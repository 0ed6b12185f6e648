"""`abiprobe cache info|prune|verify`: look after the wheel_index_cache directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from abiprobe.errors import UsageError
from abiprobe.report.cache_text import render_info, render_prune, render_verify
from abiprobe.report.jsondoc import envelope, json_text
from abiprobe.store.cache import Cache
from abiprobe.ui.console import print_all

CACHE_REPORT_SCHEMA_VERSION = 1
CACHE_REPORT_KIND = "abiprobe-cache"


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

    publish = actions.add_parser(
        "publish",
        help="write the facts checked against their wheel's sha256 as a static tree with a manifest",
        description="Writes DIR/manifest.json and the content-addressed facts and METADATA files it "
        "lists: what solve, check and inspect fetch from a published-facts location "
        "(ABIPROBE_PUBLISHED_FACTS or published-facts in abiprobe.toml) before reading a wheel. Facts "
        "read by range (never checked against the wheel's sha256) are left out.",
    )
    _common(publish)
    publish.add_argument("dir", type=Path, metavar="DIR", help="where the tree is written")
    publish.set_defaults(func=run_publish)

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
        print_all(render_info(info.to_json()))
    return 0


def run_prune(args: argparse.Namespace) -> int:
    if args.older_than is not None and args.older_than < 0:
        raise UsageError("--older-than takes a number of days, 0 or more")
    report = Cache(args.cache_dir).prune(older_than_days=args.older_than, pages=True, facts=args.facts)
    if args.json:
        _dump("prune", report.to_json())
    else:
        print_all(render_prune(report.to_json()))
    return 0


def run_verify(args: argparse.Namespace) -> int:
    report = Cache(args.cache_dir, readonly=not args.repair).verify(repair=args.repair)
    if args.json:
        _dump("verify", report.to_json())
    else:
        print_all(render_verify(report.to_json()))
    return 0 if report.ok or report.repaired else 1


def run_publish(args: argparse.Namespace) -> int:
    from abiprobe.store.published import publish

    cache = Cache(args.cache_dir, readonly=True)
    if not cache.root.is_dir():
        raise UsageError(f"no cache at {cache.root} to publish")
    try:
        report = publish(cache.root, args.dir)
    except OSError as exc:
        raise UsageError(f"cannot write the published tree at {args.dir}: {exc.strerror or exc}") from None
    if args.json:
        _dump("publish", {"root": str(cache.root), **report.to_json()})
    else:
        print(
            f"published {report.facts} facts, {report.metadata} METADATA files and {report.analyses} "
            f"stored verdicts ({report.bytes} bytes) to {report.out}; left out {report.unverified} facts "
            f"read by range (and with them every verdict) and {report.unusable} damaged or of another schema"
        )
    return 0


def _dump(action: str, body: dict[str, Any]) -> None:
    doc = envelope(CACHE_REPORT_KIND, {"action": action, **body}, CACHE_REPORT_SCHEMA_VERSION)
    sys.stdout.write(json_text(doc))
