"""Wheels abiprobe already knows (their facts are in the cache) and torch releases named on a command line.

The I/O edge of the torch range and the torch diff: the analyses themselves (``abiprobe.analyze.torch_diff``,
``abiprobe.analyze.torch_abi``) are pure and take the facts this module finds.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from abiprobe.analyze.torch_abi import TorchRelease, releases_of
from abiprobe.analyze.torch_diff import torch_libraries
from abiprobe.errors import UsageError
from abiprobe.facts import WheelFacts, WheelSummary
from abiprobe.store import entries as cache_entries
from abiprobe.store.cache import Cache
from abiprobe.store.reads import stored_facts, stored_summary

TORCH_SONAMES = frozenset(
    {
        "libc10.so",
        "libc10_cuda.so",
        "libtorch.so",
        "libtorch_cpu.so",
        "libtorch_cuda.so",
        "libtorch_python.so",
    }
)
CACHED = "cached"  # the --torch word for: every torch release whose facts the cache holds


def cached_facts(cache_dir: Path | None, want: Callable[[WheelSummary], bool]) -> list[WheelFacts]:
    """Complete facts of every cached wheel whose summary ``want`` accepts (summaries are read first: a
    few kB each), as an offline read takes them, by name and version."""
    cache = Cache(cache_dir, readonly=True)
    out: list[WheelFacts] = []
    for path in sorted((cache.root / cache_entries.FACTS_DIR).glob(f"*/*{cache_entries.SUMMARY_SUFFIX}")):
        sha = path.name.removesuffix(cache_entries.SUMMARY_SUFFIX)
        summary = stored_summary(cache, sha)
        if summary is None or not want(summary):
            continue
        facts = stored_facts(cache, sha)
        if facts is not None:
            out.append(facts)
    out.sort(key=lambda f: (f.metadata.name.lower(), f.metadata.version, f.filename))
    return out


def _is_torch(summary: WheelSummary) -> bool:
    return summary.metadata.name.lower() == "torch"


def cached_kernels(cache_dir: Path | None) -> list[WheelFacts]:
    """Cached wheels other than torch that link torch's libraries: the kernel candidates abiprobe knows."""
    return cached_facts(cache_dir, lambda s: not _is_torch(s) and bool(TORCH_SONAMES.intersection(s.needed)))


def cached_torch(cache_dir: Path | None) -> list[WheelFacts]:
    return cached_facts(cache_dir, _is_torch)


def torch_facts_of(item: str, args: argparse.Namespace) -> WheelFacts:
    """Facts of a torch named by ``torch==VERSION`` (cache first), a wheel file, URL or directory, or the
    path of a Python interpreter with torch installed; one without torch's libraries is a usage error."""
    path = Path(item)
    if path.is_file() and path.suffix != ".whl" and os.access(path, os.X_OK):
        from abiprobe.host.installed import installed_distributions

        found = installed_distributions(str(path), {"torch"})
        if not found:
            raise UsageError(f"{item}: torch is not installed for this interpreter")
        facts = found[0].facts
    elif not path.exists() and (item.startswith(("http://", "https://")) or "==" in item):
        from abiprobe.remote_inspect import inspect_remote

        remote = argparse.Namespace(
            cache_dir=args.cache_dir, index_url=args.index_url, offline=args.offline, json=True
        )
        facts = inspect_remote(item, remote, prefer_cached=True)
    elif path.is_file() and path.suffix == ".whl":
        from abiprobe.wheel import wheel_facts_from_path

        facts = wheel_facts_from_path(path)
    elif path.is_dir():
        from abiprobe.host.installed import facts_from_directory

        facts = facts_from_directory(path)
    else:
        raise UsageError(f"{item}: not a .whl file, a directory, a wheel URL or PROJECT==VERSION")
    if not torch_libraries(facts):
        raise UsageError(f"{item}: no torch libraries in it (torch/lib/*.so, torch/_C)")
    return facts


def releases_from_args(items: Sequence[str], args: argparse.Namespace) -> tuple[TorchRelease, ...]:
    """The torch releases ``--torch`` names (``cached``: every one whose facts the cache holds)."""
    facts: list[WheelFacts] = []
    for item in items:
        if item == CACHED:
            facts += cached_torch(args.cache_dir)
        else:
            facts.append(torch_facts_of(item, args))
    return releases_of(facts)


def add_torch_option(parser: argparse.ArgumentParser, default_note: str) -> None:
    parser.add_argument(
        "--torch",
        action="append",
        default=None,
        metavar="TORCH",
        help="a torch release to judge kernel wheels' torch range against (torch==VERSION, a torch wheel, "
        f"URL, directory or python path; '{CACHED}': every torch whose facts the cache holds); repeatable. "
        + default_note,
    )
