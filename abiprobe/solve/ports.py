"""The ports a solve reads through, declared by the core and implemented at the edges.

``abiprobe.commands`` wires them in: the index client (``abiprobe.index.client.IndexClient``) is an
:class:`IndexReader`, the cache (``abiprobe.store.cache.Cache``) an :class:`AnalysisStore`, the facts
readers of the store edge are :data:`FactsFor` / :data:`RuntimeFactsFor` / :data:`MetadataFor` (the full
facts behind a summary loaded through :class:`FullFacts`), and the
terminal's progress display (``abiprobe.ui.progress.wheel_work``) a :data:`Progress`. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from abiprobe.model.candidate import Candidate, IndexFile
from abiprobe.model.facts import WheelFacts, WheelInfo

T = TypeVar("T")


class PageOutcome(Protocol):
    """What one index answered for one project page (``abiprobe.index.multi.IndexOutcome``)."""

    @property
    def index(self) -> str: ...  # the index's label

    @property
    def url(self) -> str: ...

    @property
    def status(self) -> str: ...  # "failed" when the index gave no page

    @property
    def error(self) -> str | None: ...

    @property
    def from_cache(self) -> bool: ...

    @property
    def fetched_at(self) -> float | None: ...

    @property
    def candidates(self) -> int: ...  # how many files of the project the page listed


class ProjectPages(Protocol):
    """A project's candidates over every index asked, and what each index answered."""

    @property
    def candidates(self) -> tuple[Candidate, ...]: ...

    @property
    def outcomes(self) -> Sequence[PageOutcome]: ...


class NamedIndex(Protocol):
    @property
    def label(self) -> str: ...


class IndexReader(Protocol):
    """The indexes a solve lists projects on: listings, the identity of the pages a listing would be
    read from (None: it would ask the index), PEP 658 metadata, and itself less some indexes."""

    @property
    def offline(self) -> bool: ...

    @property
    def sources(self) -> Sequence[NamedIndex]: ...

    def list_project(self, project: str) -> ProjectPages: ...

    def page_identity(self, project: str) -> tuple[str, ...] | None: ...

    def fetch_metadata(self, file: IndexFile) -> bytes: ...

    def without(self, labels: Iterable[str]) -> IndexReader: ...


class AnalysisStore(Protocol):
    """Where verdicts and resolutions outlive a run (a warm re-solve simulates no loader), under the one
    memo rule (``abiprobe.store.reads.WheelReads.memoized``): what is stored under ``key`` when ``decode``
    takes it (None: stale), else ``compute``'s value, kept as ``encode`` gives it (None: not kept)."""

    def memoized(
        self,
        key: str | None,
        compute: Callable[[], T],
        encode: Callable[[T], list[dict[str, Any]] | None],
        decode: Callable[[list[dict[str, Any]]], T | None],
    ) -> T: ...


class FullFacts(Protocol):
    """A wheel's full facts (symbol tables, GPU code) behind its summary, loaded once from where the
    summary came from (``WheelInfo.origin``; ``abiprobe.store.reads.WheelReads``); those ``WheelInfo.held``
    holds as they are; None when they can no longer be had (a damaged or vanished entry)."""

    def full(self, info: WheelInfo) -> WheelFacts | None: ...


# a listed wheel's facts (the cache, else a read of the wheel)
FactsFor = Callable[[IndexFile], WheelInfo | WheelFacts]
# a runtime wheel's facts with at least the binaries (installed paths) the predicate accepts read
RuntimeFactsFor = Callable[[IndexFile, Callable[[str], bool]], WheelInfo]
# a wheel's METADATA where its index offers no PEP 658 file
MetadataFor = Callable[[IndexFile], bytes]
# what is known of a wheel's CUDA major cheaply: stored facts, else a few members' (None: nothing cheap)
VariantFactsFor = Callable[[IndexFile], WheelInfo | None]


class WorkProgress(Protocol):
    """Wheels of one batch started and finished (by file name)."""

    def started(self, name: str) -> None: ...

    def finished(self, name: str) -> None: ...


# the progress of reading ``total`` wheels at once
Progress = Callable[[int], AbstractContextManager[WorkProgress]]


class _Silent:
    def started(self, name: str) -> None:
        pass

    def finished(self, name: str) -> None:
        pass


@contextmanager
def no_progress(total: int) -> Iterator[WorkProgress]:
    """Progress nobody is shown."""
    yield _Silent()


@dataclass(frozen=True)
class SolveReads:
    """Everything a solve reads, each through its port, none optional (a port left out would change what
    is read, and so the matrix): the indexes, the wheels' facts (a runtime wheel's partial facts, the
    cheap facts that may rule out a CUDA variant, METADATA where no PEP 658 file is offered, and the full
    facts behind a summary, loaded when an analysis runs), where verdicts and closures are kept, how each
    index is shown (label -> URL) and where reading progress goes."""

    index: IndexReader
    facts_for: FactsFor
    store: AnalysisStore
    metadata_for: MetadataFor
    runtime_facts_for: RuntimeFactsFor
    index_urls: Mapping[str, str]
    progress: Progress
    # a wheel's stored facts, else its smallest library read alone (a CUDA major it rules out, cheaply)
    variant_facts_for: VariantFactsFor
    full_facts: FullFacts
