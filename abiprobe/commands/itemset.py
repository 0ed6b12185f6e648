"""The set ``check`` judges and ``probe`` installs: the named items, plus (unless ``--no-deps``) what pip
would install beside them for the target, each added wheel with the requirement that brought it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from abiprobe.analyze.preloads import preload_pattern
from abiprobe.commands.items import Item, ItemSource, OneWheel, facts_of, item_of_file
from abiprobe.model.candidate import IndexFile
from abiprobe.model.facts import WheelFacts
from abiprobe.model.stack import default_stack
from abiprobe.model.target import Target
from abiprobe.solve.closure import Pin, UserWants
from abiprobe.solve.install import AddedWheel, around_sdists, install_closure, root_of
from abiprobe.solve.unread import UnreadWheel

if TYPE_CHECKING:
    from abiprobe.solve.candidates import FilterOptions
    from abiprobe.solve.collect import Collector


@dataclass(frozen=True)
class ItemSet:
    """Items and added wheels; ``unread`` (label, reason) of every one whose bytes could not be read."""

    items: tuple[Item, ...]
    added: tuple[AddedWheel, ...] = ()
    closure_error: str | None = None
    closure_impossible: bool = False  # no install satisfies the items' requirements (else I/O trouble)
    index_trouble: tuple[str, ...] = field(default=())  # indexes that did not answer
    from_source: tuple[str, ...] = ()  # requirements no wheel meets: pip builds them (not judged)
    from_source_names: tuple[str, ...] = ()  # their projects that may build native code

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

    def unread_wheels(self) -> list[UnreadWheel]:
        """The wheels of :attr:`unread`, each with the URL it was asked from."""
        own = [UnreadWheel(i.file.filename, i.file.url, i.unread) for i in self.items if i.unread is not None]
        files = [(a.wheel.candidate.file, a.unread) for a in self.added if a.unread is not None]
        return own + [UnreadWheel(f.filename, f.url, why) for f, why in files]

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


def _collector(source: ItemSource, target: Target) -> Collector:
    from abiprobe.solve.collect import Collector
    from abiprobe.ui.progress import wheel_work

    reads = source.reads
    return Collector(
        source.client,
        reads.info,
        target,
        metadata_for=reads.metadata,
        runtime_facts_for=reads.runtime_info,
        progress=wheel_work,
        variant_facts_for=reads.variant_info,
    )


def _picked(items: Sequence[Item], wanted: UserWants, collector: Collector, target: Target,
            source: ItemSource, options: FilterOptions, no_deps: bool) -> tuple[Item, ...]:  # fmt: skip
    """The wheels the closure resolver picks for the user's ranges and bare names (beside ``items``)."""
    from packaging.utils import canonicalize_name

    from abiprobe.errors import AbiprobeError, FetchError, UsageError
    from abiprobe.solve.closure import resolve_closure

    names = {canonicalize_name(r.name) for r in wanted.requirements}
    roots = [root_of(i.file, i.info) for i in items]

    def resolve(skipped: Mapping[str, str]) -> list[Pin]:  # cut at projects pip builds from sdists
        def follow(n: str) -> bool:
            return (n in names) if no_deps else (n not in skipped)

        return resolve_closure(
            roots, collector, target, options, follow=follow, roots_win=True, wanted=wanted
        )

    try:
        pins, _ = around_sdists(resolve, keep={str(n) for n in names})
    except AbiprobeError as exc:
        failed = sorted({o.index for o in collector.outcomes if o.status == "failed"})
        if failed:
            raise FetchError(
                f"the requirements cannot be resolved: {', '.join(failed)} could not be read"
            ) from None
        raise UsageError(f"the requirements cannot be resolved for the target: {exc}") from None
    return tuple(
        item_of_file(f"{p.name}=={p.version}", p.candidate.file, source) for p in pins if p.name in names
    )


def gather(
    specs: Sequence[OneWheel],
    target: Target,
    source: ItemSource,
    *,
    no_deps: bool,
    wanted: UserWants | None = None,
    options: FilterOptions | None = None,
) -> ItemSet:
    """The items for ``target`` (and the picks for ``wanted``'s requirements) and, unless ``no_deps``,
    their install closure within ``wanted``'s constraints."""
    # the installer's constraints and overrides, with the user's own options (pre-releases) on top
    options = source.config.filter_options(target, pre=bool(options and options.pre))
    items = tuple(facts_of(spec, source, target) for spec in specs)
    collector = _collector(source, target) if wanted is not None or not no_deps else None
    if wanted is not None and wanted.requirements:
        assert collector is not None
        items += _picked(items, wanted, collector, target, source, options, no_deps)
    if no_deps:
        return ItemSet(items)
    assert collector is not None
    roots = [root_of(i.file, i.info) for i in items]
    preloaded = preload_pattern(default_stack().loading())  # check judges the built-in stack
    closure = install_closure(
        roots, collector, target, options, preloaded=preloaded, full=source, memo=source.reads, wanted=wanted
    )
    trouble = tuple(dict.fromkeys(o.index for o in collector.outcomes if o.status == "failed"))
    return ItemSet(
        items, closure.added, closure.error, closure.impossible, trouble, closure.from_source,
        closure.from_source_names,
    )  # fmt: skip
