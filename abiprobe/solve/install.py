"""What pip would install for the target when asked for some wheels: the items plus their install closure.

The closure is resolved exactly as the lock's is (``resolve_closure``: Requires-Dist with the target's
markers, extras, the runtime wheels torch pins, wheels with the target's tags), the named items fixed
as roots. Of each added wheel only what the loader can reach is read (``Reach``): its file list, its
metadata, and the libraries torch preloads or some read object needs. An added wheel that cannot be
read stays in the set, marked unread, so the checks that need it say ``unknown``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from packaging.utils import canonicalize_name

from abiprobe.analyze.preloads import install_glob
from abiprobe.analyze.runtime import TOKEN
from abiprobe.errors import AbiprobeError
from abiprobe.model.candidate import IndexFile, candidates_from_files
from abiprobe.model.facts import PyEvent, WheelFacts, WheelInfo, all_events
from abiprobe.model.target import Target
from abiprobe.solve.candidates import FilterOptions, StackCandidate
from abiprobe.solve.closure import ClosureError, Listing, Pin, UserWants, resolve_closure
from abiprobe.solve.ports import AnalysisStore, FullFacts
from abiprobe.solve.reach import PartialReader, Reach


class InstallReader(Listing, PartialReader, Protocol):
    """A solve's collector: listings, metadata, and partial reads with the reasons of failed ones."""

    def unread_reason(self, sc: StackCandidate) -> str | None: ...

    def facts(self, sc: StackCandidate) -> WheelInfo | None: ...


_MAX_FOLLOWED = 256  # functions followed from a wheel's top levels for the loads importing it makes
_MAX_FROM_SOURCE = 8  # projects left to their sdists before the closure is given up


@dataclass(frozen=True)
class AddedWheel:
    """A wheel the install brings beside the items, why, and its facts (None: not read, ``unread`` says
    why)."""

    wheel: StackCandidate
    why: str
    facts: WheelFacts | None
    unread: str | None = None

    @property
    def label(self) -> str:
        return self.wheel.label()

    def to_json(self) -> dict[str, object]:
        return {"wheel": self.label, "filename": self.wheel.filename, "why": self.why, "unread": self.unread}


@dataclass(frozen=True)
class InstallClosure:
    """The wheels added to the items, or why the closure could not be resolved (``error``)."""

    added: tuple[AddedWheel, ...] = ()
    error: str | None = None
    impossible: bool = False  # the error is a resolution no install can satisfy (else I/O trouble)
    # requirements no wheel for the target meets (sdist-only releases pip would build): the closure is
    # resolved without them, each with the line that says what is asked
    from_source: tuple[str, ...] = ()
    # of their projects, those that may build native code (not known to be pure Python), canonical names
    from_source_names: tuple[str, ...] = ()


def root_of(file: IndexFile, info: WheelInfo | None) -> StackCandidate:
    """A named item as a fixed root of the closure (its requirements from its summary, else its index's
    metadata)."""
    ((candidate,), _notes) = candidates_from_files([file])
    return StackCandidate("item", candidate, 0, info=info)


def install_closure(
    roots: Sequence[StackCandidate],
    reader: InstallReader,
    target: Target,
    options: FilterOptions,
    *,
    preloaded: re.Pattern[str],
    full: FullFacts,
    memo: AnalysisStore | None = None,
    wanted: UserWants | None = None,
) -> InstallClosure:
    """Every wheel an install of ``roots`` for ``target`` adds (``wanted``: the user's extra
    requirements and constraints), with what the loader reaches of each read (``preloaded``: the stack's
    preloads, :class:`abiprobe.solve.reach.Reach`; ``full``: their full facts, loaded)."""

    def resolve(skipped: Mapping[str, str]) -> list[Pin]:
        # the items as named, whatever the others pin: a pin that forbids one is judged as ``blocked``
        return resolve_closure(
            roots, reader, target, options, scope="install", memo=None if skipped else memo,
            roots_win=True, wanted=wanted,
            follow=(lambda n: n not in skipped) if skipped else None,
        )  # fmt: skip

    try:
        pins, skipped = around_sdists(resolve)
    except ClosureError as exc:
        return InstallClosure(error=str(exc), impossible=True)
    except AbiprobeError as exc:
        return InstallClosure(error=str(exc))
    needed = {n for r in roots if r.summary is not None for n in r.summary.needed}
    reach = Reach(reader, lambda: set(needed), preloaded)
    bare = [StackCandidate("dependency", p.candidate, 0) for p in pins]
    read = reach.settle([_own_loads_read(reader, sc, full) for sc in reach.read(bare)])
    added = []
    for pin, sc in zip(pins, read, strict=True):
        facts = full.full(sc.info) if sc.info is not None else None
        reason = None if facts is not None else (reader.unread_reason(sc) or "no facts were read")
        added.append(AddedWheel(sc, pin.why, facts, reason))
    # a project whose every wheel (of any release) is pure Python builds no library from its sdist either
    native = tuple(n for n in skipped if not _pure_python(reader, n))
    return InstallClosure(tuple(added), from_source=tuple(skipped.values()), from_source_names=native)


def around_sdists(
    resolve: Callable[[Mapping[str, str]], list[Pin]], keep: Collection[str] = ()
) -> tuple[list[Pin], dict[str, str]]:
    """``resolve(skipped)`` run again without each project no wheel for the target meets (pip builds it
    from its sdist; its canonical name, with the line that asks for it), except those of ``keep``; the
    :class:`ClosureError` when no more can be left out, or :data:`_MAX_FROM_SOURCE` are."""
    skipped: dict[str, str] = {}
    while True:
        try:
            return resolve(skipped), skipped
        except ClosureError as exc:
            more = {str(canonicalize_name(k)): v for k, v in exc.unwheeled.items()}
            more = {k: v for k, v in more.items() if k not in skipped and k not in keep}
            if not more or len(skipped) >= _MAX_FROM_SOURCE:
                raise
            skipped.update(more)


def _pure_python(reader: InstallReader, name: str) -> bool:
    """Whether the indexes list wheels of ``name`` and every one is pure Python (``none-any``)."""
    try:
        listed = reader.candidates(name)
    except AbiprobeError:
        return False
    return bool(listed) and all(t.abi == "none" and t.platform == "any" for c in listed for t in c.tags)


def _own_loads_read(reader: InstallReader, sc: StackCandidate, full: FullFacts) -> StackCandidate:
    """An added wheel whose own Python code loads libraries (z3-solver's search of its folders for
    ``libz3.so``, at import): which of its libraries that code opens is known only when the set is
    planned, so it is read whole, as a named item is (its GPU code too). Only the loads its modules' top
    levels make, themselves or through the functions they call, count; one whose name is known and names
    none of its unread libraries (triton's ``CDLL("libc.so.6")``) reads nothing more."""
    if sc.info is None or sc.summary is None or not sc.summary.unread:
        return sc
    facts = full.full(sc.info)
    if facts is None or not facts.python:
        return sc
    unread = [posixpath.basename(p) for p in sc.summary.unread]
    if not any(e.kind == "load" and _may_name(e.target, unread) for e in _import_time_events(facts)):
        return sc
    info = reader.facts(sc)
    return replace(sc, info=info) if info is not None else sc


def _may_name(target: str, unread: Sequence[str]) -> bool:
    """Whether a load's target (a path pattern: ``{...}`` a value computed when planned) may name one of
    the ``unread`` file names."""
    name = TOKEN.sub("*", target).rsplit("/", 1)[-1]
    return not name or any(install_glob(name).fullmatch(u) for u in unread)


def _import_time_events(facts: WheelFacts) -> list[PyEvent]:
    """The events of the wheel's modules' top levels and of the functions those call (by name, through
    the calls of those functions in turn): what importing its modules may run."""
    functions = {f"{m.name}.{f.name}": f for m in facts.python or () for f in m.functions}
    out = [e for m in facts.python or () for e in all_events(m.events)]
    seen: set[str] = set()
    todo = [e.target for e in out if e.kind == "call"]
    while todo and len(seen) < _MAX_FOLLOWED:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        more = list(all_events(functions[name].events))
        out += more
        todo += [e.target for e in more if e.kind == "call"]
    return out
