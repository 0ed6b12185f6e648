"""The set ``check`` judges and ``probe`` installs: the named items, plus (unless ``--no-deps``) what pip
would install beside them for the target, each added wheel with the requirement that brought it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from abiprobe.commands.items import Item, ItemSource, resolve_item
from abiprobe.model.candidate import IndexFile
from abiprobe.model.facts import WheelFacts
from abiprobe.model.target import Target
from abiprobe.solve.install import AddedWheel, install_closure, root_of


@dataclass(frozen=True)
class ItemSet:
    """Items and added wheels; ``unread`` (label, reason) of every one whose bytes could not be read."""

    items: tuple[Item, ...]
    added: tuple[AddedWheel, ...] = ()
    closure_error: str | None = None
    closure_impossible: bool = False  # no install satisfies the items' requirements (else I/O trouble)
    index_trouble: tuple[str, ...] = field(default=())  # indexes that did not answer

    @property
    def facts(self) -> list[WheelFacts]:
        own = [i.facts for i in self.items if i.facts is not None]
        return own + [a.facts for a in self.added if a.facts is not None]

    @property
    def unread(self) -> list[tuple[str, str]]:
        """What could not be read: wheels, or the install closure itself (then whatever it would add)."""
        own = [(i.label, i.unread) for i in self.items if i.unread is not None]
        own += [(a.label, a.unread) for a in self.added if a.unread is not None]
        if self.closure_error is not None and not self.closure_impossible:
            own.append(("what pip would install beside the items", self.closure_error))
        return own

    def files(self) -> list[IndexFile]:
        """Every wheel to install, items first."""
        return [i.file for i in self.items] + [a.wheel.candidate.file for a in self.added]

    def to_json(self) -> dict[str, object]:
        return {
            "items": [{"item": i.text, "filename": i.file.filename, "unread": i.unread} for i in self.items],
            "resolved": self.closure_error is None,
            "error": self.closure_error,
            "added": [a.to_json() for a in self.added],
        }


def gather(texts: Sequence[str], target: Target, source: ItemSource, *, no_deps: bool) -> ItemSet:
    """The items for ``target`` and, unless ``no_deps``, their install closure."""
    items = tuple(resolve_item(text, source, target) for text in texts)
    if no_deps:
        return ItemSet(items)
    from abiprobe.solve.candidates import FilterOptions
    from abiprobe.solve.collect import Collector
    from abiprobe.ui.progress import wheel_work

    reads = source.reads
    collector = Collector(
        source.client,
        reads.info,
        target,
        metadata_for=reads.metadata,
        runtime_facts_for=reads.runtime_info,
        progress=wheel_work,
    )
    roots = [root_of(i.file, i.info) for i in items]
    closure = install_closure(roots, collector, target, FilterOptions(), memo=source.cache)
    trouble = tuple(dict.fromkeys(o.index for o in collector.outcomes if o.status == "failed"))
    return ItemSet(items, closure.added, closure.error, closure.impossible, trouble)
