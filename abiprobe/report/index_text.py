"""Rich rendering of a project's listing (``abiprobe index ls``): one table of candidates, then each
index's outcome (a failed index as a warning) and the listing's notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rich.markup import escape
from rich.table import Table

from abiprobe.model.candidate import Candidate
from abiprobe.report.lines import Part, Warn


class OutcomeView(Protocol):
    """What the rendering reads of one index's outcome (``abiprobe.index.multi.IndexOutcome`` has it)."""

    @property
    def index(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def from_cache(self) -> bool: ...
    @property
    def stale(self) -> bool: ...
    @property
    def candidates(self) -> int: ...
    @property
    def used(self) -> bool: ...


class ListingView(Protocol):
    """What the rendering reads of a listing (``abiprobe.index.multi.ProjectListing`` has it)."""

    @property
    def project(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def candidates(self) -> Sequence[Candidate]: ...
    @property
    def outcomes(self) -> Sequence[OutcomeView]: ...
    @property
    def notes(self) -> Sequence[str]: ...


def render_listing(listing: ListingView) -> list[Part]:
    table = Table(title=f"{listing.project} ({listing.strategy})")
    for column in ("version", "local", "tags", "yanked", "metadata", "sha256", "uploaded", "index"):
        table.add_column(column)
    ordered = sorted(listing.candidates, key=lambda c: (c.version, c.file.filename), reverse=True)
    for c in ordered:
        yanked = "" if not c.file.is_yanked else (c.file.yanked_reason or "yes")
        row = (
            str(c.version.public) + (f" (build {c.build_tag[0]}{c.build_tag[1]})" if c.build_tag else ""),
            c.local_label or "",
            c.tags_summary(),
            yanked,
            "yes" if c.file.has_metadata else "",
            (c.file.sha256 or "-")[:12] + (" dup" if c.file.duplicate else ""),
            c.file.upload_time or "",
            c.file.index_url,
        )
        table.add_row(*(escape(cell) for cell in row))
    parts: list[Part] = [table]
    for o in listing.outcomes:
        state = o.status if not o.error else f"{o.status}: {o.error}"
        extra = (" (cache" + (", stale" if o.stale else "") + ")") if o.from_cache else ""
        line = f"  {o.index}: {state}{extra}, {o.candidates} wheels{' [used]' if o.used else ''}"
        if o.status == "failed":
            parts.append(Warn(f"index {line.strip()}"))
        else:
            parts.append(escape(line))  # "[used]" would otherwise be read as a rich style tag and dropped
    parts.extend(escape(f"  note: {note}") for note in listing.notes)
    return parts
