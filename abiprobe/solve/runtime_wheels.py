"""The runtime (nvidia) wheels a base wheel pins: resolved over their own dependency tree, with only the
libraries the loader can reach read."""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from abiprobe.errors import AbiprobeError
from abiprobe.model.cuda_variant import infer_variant
from abiprobe.model.facts import WheelFacts, WheelInfo, WheelSummary
from abiprobe.model.requirements import applicable_requirements
from abiprobe.model.target import Target
from abiprobe.solve.candidates import FilterOptions, StackCandidate, prefilter, select_window
from abiprobe.solve.closure import resolve_closure
from abiprobe.solve.collect import Collector
from abiprobe.solve.matrix import Group
from abiprobe.solve.ports import AnalysisStore, FullFacts
from abiprobe.solve.reach import Reach

_RUNTIME_PREFIXES = ("nvidia-", "cuda-toolkit")


class RuntimeWheels:
    """The nvidia wheels a base (torch) wheel pins, found on the indexes, with their facts.

    Choosing them needs summaries only; their full facts are loaded when an analysis really runs. Of each
    wheel only the libraries the loader can reach are read: those torch preloads and those whose file
    name some stack candidate or read library needs (DT_NEEDED), to a fixed point. cuDNN's dlopen'd
    engines (a gigabyte) stay unread: no static verdict looks at them.
    """

    def __init__(
        self,
        collector: Collector,
        options: FilterOptions,
        store: AnalysisStore | None,
        preloaded: re.Pattern[str],
        full: FullFacts,
    ) -> None:
        self.collector = collector
        self.full = full
        self.options = options
        self.store = store
        self._picked: dict[str, StackCandidate | None] = {}
        self._chosen: dict[str, tuple[StackCandidate, ...]] = {}
        self._unread: dict[str, tuple[tuple[str, str], ...]] = {}
        # sonames needed: every stack candidate's (all collected before any runtime wheel is read), then
        # those of the runtime libraries read
        self._reach = Reach(collector, collector.stack_needed, preloaded)

    def _info(self, sc: StackCandidate) -> WheelInfo | None:
        return self._reach.info(sc)

    def _settled(self, chosen: list[StackCandidate]) -> list[StackCandidate]:
        """Read what the libraries read so far need, until nothing more is reached."""
        return self._reach.settle(chosen)

    def __call__(self, base: Group) -> Sequence[WheelFacts]:
        """Full facts of the runtime wheels (loads them)."""
        wheels = self.wheels(base)
        return tuple(f for sc in wheels if sc.info is not None and (f := self.full.full(sc.info)) is not None)

    def unread(self, base: Group) -> Sequence[tuple[str, str]]:
        """(label, reason) of the runtime wheels an install of ``base`` gets that could not be read."""
        self.wheels(base)
        return self._unread.get(base.key, ())

    def summaries(self, base: Group) -> Sequence[WheelSummary]:
        return tuple(s for sc in self.wheels(base) if (s := sc.summary) is not None)

    def wheels(self, base: Group) -> list[StackCandidate]:
        """The runtime wheels an install of ``base`` gets: resolved over every pin on them in the runtime
        wheels' own dependency tree (as an installer would); one requirement at a time when that fails."""
        if base.key not in self._chosen:
            chosen = self._resolved(base)
            if chosen is None:
                found: dict[str, StackCandidate] = {}
                unread: list[tuple[str, str]] = []
                for w in base.wheels:
                    if w.summary is not None:
                        self._expand(w.summary, frozenset(), found, unread, depth=0)
                chosen = [found[k] for k in sorted(found)]
                self._unread[base.key] = tuple(unread)
            self._chosen[base.key] = tuple(self._settled(chosen))
        return list(self._chosen[base.key])

    def _resolved(self, base: Group) -> list[StackCandidate] | None:
        roots = [w for w in base.wheels if w.summary is not None]
        target = self.collector.target
        try:
            pins = resolve_closure(
                roots,
                self.collector,
                target,
                self.options,
                follow=lambda n: n.startswith(_RUNTIME_PREFIXES),
                scope="runtime",
                memo=self.store,
            )
        except AbiprobeError as exc:
            self.collector.problems.append(f"runtime wheels of {base.id} picked one pin at a time: {exc}")
            return None
        out = []
        bare_pins = [StackCandidate("runtime", pin.candidate, 0) for pin in pins]
        self._reach.needed  # noqa: B018 - made before the readers start, which only read it
        self.collector.prefetch(bare_pins, self._reach)
        unread = []
        for bare in bare_pins:  # all runtime projects: nothing else was followed
            info = self._info(bare)
            if info is not None:
                variant = infer_variant(bare.candidate, info.summary, target)
                out.append(StackCandidate("runtime", bare.candidate, 0, info=info, variant=variant))
            else:
                unread.append((bare.label(), self.collector.unread_reason(bare) or "no facts were read"))
        self._unread[base.key] = tuple(unread)
        return out

    def _expand(
        self,
        facts: WheelSummary,
        extras: frozenset[str],
        found: dict[str, StackCandidate],
        unread: list[tuple[str, str]],
        depth: int,
    ) -> None:
        target = self.collector.target
        for req in _requirements_with_extras(facts.metadata.requires_dist, target, extras):
            name = canonicalize_name(req.name)
            if not name.startswith(_RUNTIME_PREFIXES) or name in found or depth > 3:
                continue
            sc = self._pick(req)
            if sc is not None and sc.summary is None:
                unread.append((sc.label(), self.collector.unread_reason(sc) or "no facts were read"))
            if sc is None or sc.summary is None:
                continue
            found[name] = sc
            self._expand(sc.summary, frozenset(req.extras), found, unread, depth + 1)

    def _pick(self, req: Requirement) -> StackCandidate | None:
        key = f"{canonicalize_name(req.name)}{req.specifier}"
        if key not in self._picked:
            target = self.collector.target
            every_version = self.collector.candidates(req.name)
            listed, _ = prefilter("runtime", every_version, req.specifier, target, self.options)
            kept, _ = select_window("runtime", listed, self._info, target, 1)
            self._picked[key] = kept[0] if kept else None
        return self._picked[key]


def _requirements_with_extras(
    requires_dist: Sequence[str], target: Target, extras: frozenset[str]
) -> list[Requirement]:
    base = applicable_requirements(requires_dist, target)
    return [*base, *(applicable_requirements(requires_dist, target, extras) if extras else ())]
