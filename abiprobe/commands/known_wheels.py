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
from abiprobe.commands.item_specs import Accepts, InstalledSpec, LocalFileSpec
from abiprobe.commands.items import ItemSource, facts_of, one_wheel
from abiprobe.errors import UsageError
from abiprobe.model.facts import WheelFacts, WheelSummary
from abiprobe.model.target import Target
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
# What `diff OLD NEW` and `--torch` take as one torch release (besides the word `cached`, for --torch).
TORCH_RELEASE = Accepts(
    "a torch release is",
    ("pinned", "wheel", "url", "directory", "file"),
    words={"pinned": "torch==VERSION", "file": "a Python interpreter with torch installed"},
)


def cached_facts(cache_dir: Path | None, want: Callable[[WheelSummary], bool]) -> list[WheelFacts]:
    """Complete facts of every cached wheel whose summary ``want`` accepts (summaries are read first: a
    few kB each), as an offline read takes them, by name and version."""
    cache = Cache(cache_dir, readonly=True)
    out: list[WheelFacts] = []
    for sha in cache.summarized_wheels():
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


def torch_facts_of(text: str, source: ItemSource, target: Target | None) -> WheelFacts:
    """Facts of a torch named by ``torch==VERSION`` (the wheel ``target`` would get, one whose facts are
    cached first; without a target, this host's), a wheel file, URL or directory, or the path of a Python
    interpreter with torch installed; one without torch's libraries is a usage error."""
    spec = TORCH_RELEASE.spec(text)
    if isinstance(spec, LocalFileSpec):
        if not os.access(spec.path, os.X_OK):
            raise UsageError(f"{text}: not a torch wheel, and not an executable Python interpreter")
        item = facts_of(InstalledSpec(text, "torch", str(spec.path)), source, target)
    else:
        item = facts_of(
            one_wheel(spec, TORCH_RELEASE), source, target, tolerate_unread=False, prefer_cached=True
        )
    assert item.facts is not None  # an unread item raised
    if not torch_libraries(item.facts):
        raise UsageError(f"{text}: no torch libraries in it (torch/lib/*.so, torch/_C)")
    return item.facts


def torch_releases(
    texts: Sequence[str], source: ItemSource, target: Target | None
) -> tuple[TorchRelease, ...]:
    """The torch releases ``--torch`` names (``cached``: every one whose facts the cache holds)."""
    facts: list[WheelFacts] = []
    for text in texts:
        if text == CACHED:
            facts += cached_torch(source.cache.root)
        else:
            facts.append(torch_facts_of(text, source, target))
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
