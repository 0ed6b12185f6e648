"""When a stored entry read through a wheel's central directory may answer for a listed file.

The policy is an argument of the reads (:class:`Freshness`, as a cache-control value is for uv's cached
client): offline everything answers as stored; under ``verify`` only entries checked against a sha256 do;
otherwise a range-read entry answers while the index lists the file as it did before this run (an
answer the index client gives, passed in as ``listed_as_before``), else while the server still serves the
very central directory it was read through (:class:`ServedDirectories`: one tail request per URL and run).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from abiprobe.model.candidate import IndexFile
from abiprobe.net.http import Http, display_url
from abiprobe.net.remote_wheel import RemoteZip

if TYPE_CHECKING:
    from abiprobe.model.facts import WheelFacts, WheelSummary
    from abiprobe.store.cache import Cache


def never_listed_before(_file: IndexFile) -> bool:
    """No index client vouches for any listing (a read without one, or a wheel named by URL)."""
    return False


@dataclass(frozen=True)
class Freshness:
    """What may answer without reading a wheel again: ``offline`` (all as stored), ``verify`` (only what
    was checked against a sha256: ``--verify-wheels``), and ``listed_as_before`` (the index lists the file,
    same URL and sha256, as it did before this run: ``IndexClient.listed_as_before``)."""

    offline: bool = False
    verify: bool = False
    listed_as_before: Callable[[IndexFile], bool] = never_listed_before


class ServedDirectories:
    """The sha256 of the central directory each wheel URL serves, learned once per run: from the reads
    made through :meth:`open`, else from one tail request (:meth:`served`). ``hosts`` keeps the notes on
    hosts that ignore ranges (``abiprobe.store.cache.Cache``)."""

    def __init__(self, http: Http, hosts: Cache | None) -> None:
        self.http, self.hosts = http, hosts
        self._known: dict[str, str] = {}
        self._asking: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    @contextmanager
    def open(self, file: IndexFile) -> Iterator[RemoteZip]:
        """A range reader of ``file``; the directory it read through is remembered for the run."""
        with RemoteZip(self.http, file.url, file.sha256, file.size, self.hosts) as remote:
            try:
                yield remote
            finally:
                if remote.directory_sha256 is not None:
                    self.remember(file.url, remote.directory_sha256)

    def remember(self, url: str, digest: str) -> None:
        with self._lock:
            self._known[display_url(url)] = digest

    def served(self, file: IndexFile) -> str | None:
        """The directory's sha256 the server serves for ``file`` now (None: its host ignores ranges)."""
        shown = display_url(file.url)
        with self._lock:
            asking = self._asking.setdefault(shown, threading.Lock())
        with asking:  # one tail however many ask at once (a solve's check, and the revalidation's beside it)
            with self._lock:
                known = self._known.get(shown)
            if known is not None:
                return known
            with self.open(file) as remote:
                remote.open()
                return remote.directory_sha256


@dataclass(frozen=True)
class Trust:
    """The one rule of what a stored entry of a listed wheel may answer, under ``freshness``."""

    freshness: Freshness
    directories: ServedDirectories

    def facts_answer(self, entry: WheelFacts | WheelSummary, file: IndexFile) -> bool:
        """Stored facts: verified ones always; range-read ones (offline: as stored) while the index lists
        the file as before this run, else while the server serves the directory they were read through."""
        if entry.verified or self.freshness.offline:
            return True
        if self.freshness.verify:
            return False
        return entry.directory_sha256 is not None and self.bound(entry.directory_sha256, file)

    def entry_answers(self, directory_sha256: str | None, file: IndexFile) -> bool:
        """An entry kept by ``file``'s URL or sha256 (its METADATA, its URL's sha256): checked against the
        sha256 (no directory), offline as stored, else as :meth:`bound`."""
        return directory_sha256 is None or self.freshness.offline or self.bound(directory_sha256, file)

    def bound(self, directory_sha256: str, file: IndexFile) -> bool:
        """Whether the bytes read through ``directory_sha256`` are still ``file``'s: the index lists it as
        before this run, or the server still serves that very directory."""
        if self.freshness.listed_as_before(file):
            return True
        return directory_sha256 == self.directories.served(file)
