"""What the last solve of a stack on some indexes left behind for the next one, read once and written once.

Two stored entries under one key (the indexes and the stack): the projects it listed, and the wheels whose
facts it had from range reads. ``abiprobe solve`` recalls both before it solves (``LastSolve.recall``),
asks about all those pages and zip directories at once (``revalidate``), and after the solve adds what
this one listed and range-read (``remember``). Offline solves neither recall nor remember.

Not the store's memo rule (``abiprobe.store.reads.WheelReads.memoized``: what is stored under a key
answers instead of computing it): what is stored here answers nothing. It is read before the solve so the
solve's pages can be asked about at once, the solve runs whatever it says, and what is written after is
the union of the old entry and what this solve met, written only when it grew.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from abiprobe.errors import AbiprobeError
from abiprobe.index.client import IndexClient
from abiprobe.index.config import IndexSource
from abiprobe.model.candidate import IndexFile
from abiprobe.model.hosts import concrete, neutral
from abiprobe.model.stack import Stack
from abiprobe.net.http import display_url
from abiprobe.store.cache import Cache
from abiprobe.store.trust import ServedDirectories


def listed_projects_key(sources: Sequence[IndexSource], stack: Stack) -> str:
    """The key under which a solve remembers which projects it listed: its indexes and its stack."""
    text = "\n".join(
        ["listed-projects", *(neutral(display_url(s.url)) for s in sources), *stack.project_names()]
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _range_key(key: str) -> str:
    return hashlib.sha256(f"range-read\n{key}".encode()).hexdigest()


def _listed(stored: Sequence[Any]) -> tuple[str, ...]:
    return tuple(
        str(e["project"]) for e in stored if isinstance(e, dict) and isinstance(e.get("project"), str)
    )


def _range_read(stored: Sequence[Any]) -> tuple[IndexFile, ...]:
    out = []
    for e in stored:
        if isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("filename", "url", "sha256")):
            size = e.get("size") if isinstance(e.get("size"), int) else None
            out.append(IndexFile(e["filename"], concrete(e["url"]), {"sha256": e["sha256"]}, size=size))
    return tuple(out)


@dataclass(frozen=True)
class LastSolve:
    """The stored entries of the last solve under ``key``, as read once at the start of this one."""

    cache: Cache
    key: str
    rules: str  # the read rules' key of the stack's stored facts (abiprobe.store.reads.read_rules_key)
    projects: tuple[str, ...]  # every project of the stack, then those the last solve listed
    listed_doc: tuple[Any, ...]
    range_doc: tuple[Any, ...]

    @classmethod
    def recall(cls, cache: Cache, sources: Sequence[IndexSource], stack: Stack) -> LastSolve:
        key = listed_projects_key(sources, stack)
        listed_doc, range_doc = (tuple(cache.load_analysis(k) or ()) for k in (key, _range_key(key)))
        from abiprobe.store.reads import read_rules_key  # imported while the indexes answer (see solve)

        projects = (*stack.project_names(), *_listed(listed_doc))
        return cls(cache, key, read_rules_key(stack.unread_sources()), projects, listed_doc, range_doc)

    def revalidate(self, client: IndexClient, directories: ServedDirectories) -> Future[None]:
        """Stale pages (conditionally), all asked at once now (a listing waits for its own page's
        answer); then, once they have answered, the directories (one tail each, at once) of the
        range-read wheels the index now lists otherwise than before (none when every page is
        unchanged), remembered by ``directories`` for the rest of the run. A wheel whose page is not
        stored is left to its listing (``abiprobe.store.trust``). The future is done when all is."""
        client.revalidate(self.projects, wait=False)
        after = ThreadPoolExecutor(1)
        done = after.submit(self._directories, client, directories)
        after.shutdown(wait=False)
        return done

    def _directories(self, client: IndexClient, directories: ServedDirectories) -> None:
        todo = [f for f in _range_read(self.range_doc) if client.listing_as_before(f, unlisted=True) is False]
        with ThreadPoolExecutor(max(1, min(len(todo), directories.http.max_workers))) as pool:
            tails = [pool.submit(directories.served, f) for f in todo]
            for tail in tails:
                with contextlib.suppress(AbiprobeError):  # a failure is met again, and said, where it counts
                    tail.result()

    def remember(self, listed: Iterable[str], range_read: Sequence[IndexFile]) -> None:
        """Project names only (no host, no time), added to those remembered before (a solve answered from
        stored resolutions lists fewer): the next solve asks about all their pages at once. And the wheels
        whose facts this solve had from range reads (URLs with the registry's host as a token), added to
        those remembered before (a solve answered from stored results reads no facts), less those whose
        stored facts are no longer range-read ones."""
        before = _listed(self.listed_doc)
        names = sorted(set(listed) | set(before))
        known: dict[str, dict[str, object]] = {}
        for f in [*_range_read(self.range_doc), *range_read]:
            # from the entry's header
            if f.sha256 and self.cache.facts_verified(f.sha256, rules=self.rules) is False:
                known[f.url] = {
                    "filename": f.filename,
                    "url": neutral(f.url),
                    "sha256": f.sha256,
                    "size": f.size,
                }
        range_doc = [known[u] for u in sorted(known)]
        for key, doc, changed in (
            (self.key, [{"project": n} for n in names], names != sorted(before)),
            (_range_key(self.key), range_doc, range_doc != list(self.range_doc)),
        ):
            if changed:
                self.cache.store_analysis(key, doc)
