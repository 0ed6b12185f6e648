"""Combining several indexes' answers for one project: first-index, best-match, and per-project pins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from packaging.utils import canonicalize_name

from abiprobe.index.config import IndexSource, Strategy
from abiprobe.model.candidate import (
    Candidate,
    ProjectPage,
    candidates_from_files,
    mark_duplicates,
)

FetchStatus = Literal["ok", "not-found", "failed"]


@dataclass(frozen=True)
class PageFetch:
    """One index's answer for one project; a failed fetch may still carry a cached page."""

    source: IndexSource
    url: str
    status: FetchStatus
    page: ProjectPage | None = None
    error: str | None = None
    from_cache: bool = False
    revalidated: bool = False
    stale: bool = False
    fetched_at: float | None = None


@dataclass(frozen=True)
class IndexOutcome:
    """What one index did for a listing: answered, lacked the project, or failed (and why)."""

    index: str
    url: str
    status: FetchStatus
    error: str | None
    from_cache: bool
    stale: bool
    candidates: int
    used: bool
    fetched_at: float | None = None  # when the page answered was fetched (from the cache: its age)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ProjectListing:
    """The candidates of one project under a strategy, with each index's outcome and notes."""

    project: str
    strategy: Strategy
    candidates: tuple[Candidate, ...]
    outcomes: tuple[IndexOutcome, ...]
    notes: tuple[str, ...] = ()

    @property
    def failed(self) -> tuple[IndexOutcome, ...]:
        return tuple(o for o in self.outcomes if o.status == "failed")

    @property
    def stale(self) -> tuple[IndexOutcome, ...]:
        return tuple(o for o in self.outcomes if o.stale)

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "strategy": self.strategy,
            "candidates": [c.to_json() for c in self.candidates],
            "indexes": [o.to_json() for o in self.outcomes],
            "notes": list(self.notes),
        }


def sources_for(
    project: str, sources: Sequence[IndexSource], pins: Mapping[str, str]
) -> tuple[IndexSource, ...]:
    """The sources to ask for ``project``: only the pinned one when the project is pinned."""
    ref = pins.get(canonicalize_name(project))
    if ref is None:
        return tuple(sources)
    return tuple(s for s in sources if s.matches(ref))


def fetch_candidates(fetch: PageFetch, project: str) -> tuple[tuple[Candidate, ...], tuple[str, ...]]:
    if fetch.page is None:
        return (), ()
    return candidates_from_files(fetch.page.files, project)


def has_project(fetch: PageFetch, project: str) -> bool:
    """Whether this answer lists any wheel of ``project`` (a find-links page may list only others)."""
    return bool(fetch_candidates(fetch, project)[0])


def _mark_twins(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """A filename the used indexes list with different hashes is flagged on every listing of it."""
    marked = mark_duplicates(c.file for c in candidates)
    return tuple(c if c.file == f else replace(c, file=f) for c, f in zip(candidates, marked, strict=True))


def _twin_notes(used: Sequence[Candidate], fetches: Sequence[PageFetch], project: str) -> list[str]:
    """Filenames that two indexes list with different sha256 (whether or not both are used)."""
    seen: dict[str, tuple[str, str]] = {}
    notes: list[str] = []
    for fetch in fetches:
        for c in fetch_candidates(fetch, project)[0]:
            sha = c.file.sha256 or ""
            first = seen.setdefault(c.file.filename, (fetch.source.label, sha))
            if first[0] != fetch.source.label and first[1] != sha:
                picked = "both are candidates" if c in used else f"only {first[0]}'s is used"
                notes.append(
                    f"{c.file.filename}: {first[0]} lists sha256 {first[1][:12]}, {fetch.source.label} "
                    f"{sha[:12]} ({picked})"
                )
    return notes


def first_index_admits(taken: str | None, pool: str) -> bool:
    """Under first-index, whether an index of ``pool`` still counts once an index of pool ``taken`` has
    listed the project (None: none has yet): only the same, named pool (pip's indexes) is merged."""
    return taken is None or (bool(pool) and pool == taken)


def combine(project: str, strategy: Strategy, fetches: Sequence[PageFetch]) -> ProjectListing:
    """Pure merge of per-index answers (in lookup order) into one listing."""
    candidates: list[Candidate] = []
    outcomes: list[IndexOutcome] = []
    notes: list[str] = []
    taken: str | None = None  # under first-index: the pool of the first index that listed the project
    for fetch in fetches:
        found, skipped = fetch_candidates(fetch, project)
        pool = fetch.source.pool
        use = bool(found) and (strategy == "best-match" or first_index_admits(taken, pool))
        if use:
            candidates.extend(found)
            taken = pool if taken is None else taken
            notes.extend(skipped)
            if fetch.page is not None:
                notes.extend(fetch.page.notes)
        elif fetch.page is not None:  # a malformed page is said even when it lends no candidate
            notes.extend(fetch.page.problems)
        if fetch.status == "failed" and fetch.page is not None:
            notes.append(f"{fetch.source.label}: {fetch.error}; answered from the cache")
        outcomes.append(
            IndexOutcome(
                index=fetch.source.label,
                url=fetch.url,
                status=fetch.status,
                error=fetch.error,
                from_cache=fetch.from_cache,
                stale=fetch.stale,
                candidates=len(found),
                used=use,
                fetched_at=fetch.fetched_at,
            )
        )
    notes += _twin_notes(candidates, fetches, project)
    return ProjectListing(
        project=str(canonicalize_name(project)),
        strategy=strategy,
        candidates=_mark_twins(candidates),
        outcomes=tuple(outcomes),
        notes=tuple(dict.fromkeys(notes)),
    )
