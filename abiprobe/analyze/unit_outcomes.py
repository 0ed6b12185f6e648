"""Verdicts for units that are no object of the set (a computed file it does not have, a bare name the
system's search must find, a path abiprobe cannot follow, the package's own ``raise``), for failures the
package catches, and for a distribution with native code nothing followed loads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from abiprobe.analyze.first_error import LoaderMessage, site_path
from abiprobe.analyze.layout import dist_label
from abiprobe.analyze.loader import LoaderSimulation
from abiprobe.analyze.profiles import DRIVER_SONAME
from abiprobe.analyze.units import PlannedUnit
from abiprobe.model.facts import WheelFacts, all_events
from abiprobe.model.verdict import Verdict

_NO_FILE = "cannot open shared object file: No such file or directory"


class JudgedUnit(Protocol):
    """What these helpers read of a unit analysis (abiprobe.analyze.analysis.UnitAnalysis)."""

    @property
    def path(self) -> str: ...
    @property
    def dist(self) -> str: ...
    @property
    def loader_message(self) -> LoaderMessage | None: ...
    @property
    def verdicts(self) -> tuple[Verdict, ...]: ...


@dataclass(frozen=True)
class VirtualOutcome:
    """A unit that is not an object of the set, judged: its distribution, verdicts and message."""

    dist: str
    kind: str
    verdicts: tuple[Verdict, ...]
    message: LoaderMessage | None


def _dist_of(sim: LoaderSimulation, where: str) -> str:
    module = where.split(" line ", 1)[0]
    wheel = next((w for w in sim.layout.wheels if module in w.files), None)
    return dist_label(wheel) if wheel is not None else ""


def _failure(u: JudgedUnit) -> str:
    if u.loader_message is not None:
        return u.loader_message.text
    bad = next((v for v in u.verdicts if v.status in ("fail", "unknown")), None)
    return bad.explanation if bad is not None else "fails"


def _failed_candidates(unit: PlannedUnit, done: Sequence[JudgedUnit]) -> list[tuple[str, JudgedUnit]]:
    """The candidates the package tried before this unit that failed, as judged: those since the last
    load that succeeded on its path (what loaded before belongs to an earlier search: fairseq2n's
    oneTBB, found, before its libsndfile, not)."""
    by_path = {u.path: u for u in done}
    since = max((i + 1 for i, (_key, ok) in enumerate(unit.when) if ok), default=0)
    return [(key, by_path[_name(key)]) for key, ok in unit.when[since:] if not ok and _name(key) in by_path]


def tried_before(unit: PlannedUnit, done: Sequence[JudgedUnit]) -> list[tuple[str, str]]:
    """The candidates the package tried before this unit that failed, with their first failure."""
    return [(key, _failure(u)) for key, u in _failed_candidates(unit, done)]


def _name(key: str) -> str:
    return key.split(":", 1)[1] if key.startswith(("soname:", "unresolved:", "raise:")) else key


# what the NVIDIA driver installs beside libcuda.so.1, found by the system's search on a host with a GPU
DRIVER_LIBRARIES = frozenset({DRIVER_SONAME, "libnvidia-ml.so.1"})


def virtual_outcome(sim: LoaderSimulation, unit: PlannedUnit, done: Sequence[JudgedUnit]) -> VirtualOutcome:
    """The verdicts of a planned unit with no object of the set behind it."""
    dist = _dist_of(sim, unit.where)
    at = f" ({unit.api} at {unit.where})" if unit.where else ""
    if unit.how == "soname":
        name = _name(unit.path)
        found = sim.found_then.get(unit.path)
        if found is None:
            found = (
                name in sim.loaded
                or sim.profile.library(name) is not None
                or (sim.driver is not None and name in DRIVER_LIBRARIES)
            )
        if found:
            text = f"{name} is found by the system's search (loaded already, or a target system library){at}"
            return VirtualOutcome(dist, "library", (Verdict("sonames", "ok", text, unit.path),), None)
        message = LoaderMessage(f"OSError: {name}: {_NO_FILE}", "needed", unit.path, via=at.strip(" ()"))
        text = f"{name} is neither in the set nor among the target's system libraries{at}"
        return VirtualOutcome(
            dist, "library", (_with(Verdict("sonames", "fail", text, unit.path), message),), message
        )
    if unit.how == "absent":
        message = LoaderMessage(f"OSError: {site_path(unit.path)}: {_NO_FILE}", "needed", unit.path)
        why = f" ({unit.note})" if unit.note else ""
        text = f"the package loads {unit.path}{why}, which the set does not have{at}"
        return VirtualOutcome(
            dist, "library", (_with(Verdict("sonames", "fail", text, unit.path), message),), message
        )
    if unit.how == "fallback":
        path = unit.path.split(":", 1)[1]
        why = f" ({unit.note})" if unit.note else ""
        text = f"the package looks for {path}, which the set does not have{at}{why}"
        return VirtualOutcome(dist, "library", (Verdict("sonames", "warn", text, path),), None)
    if unit.how == "raise":
        candidates = _failed_candidates(unit, done)
        failed = [(key, _failure(u)) for key, u in candidates]
        line = unit.raises or (failed[-1][1] if failed else "an error")
        # the loader's own first line, when a candidate the package tried failed in the loader: what the
        # chain of errors starts from; the package's exception is Python's last line
        loader = next(
            (m for _, u in candidates if (m := u.loader_message) is not None and not m.raised), None
        )
        via = f"raised at {unit.where}"
        message = (
            replace(loader, via=via, raised=line)
            if loader is not None and loader.text != line
            else LoaderMessage(line, "needed", unit.path, via=via)
        )
        tried = "; ".join(f"{_name(k)}: {m}" for k, m in failed)
        text = f"the package raises {line} at {unit.where}" + (
            f" (candidates tried: {tried})" if tried else ""
        )
        evidence = {"candidates": [{"unit": _name(k), "first_failure": m} for k, m in failed]}
        verdict = _with(Verdict("sonames", "fail", text, unit.path, evidence), message)
        return VirtualOutcome(dist, "raise", (verdict,), message)
    text = f"{unit.note or unit.where}: which file the package loads cannot be followed statically"
    return VirtualOutcome(
        dist, "library", (Verdict("sonames", "unknown", text, unit.path, {"where": unit.where}),), None
    )


def _with(v: Verdict, message: LoaderMessage) -> Verdict:
    return replace(v, evidence={**v.evidence, "loader_message": message.to_json()})


def caught_verdicts(verdicts: tuple[Verdict, ...], unit: PlannedUnit) -> tuple[Verdict, ...]:
    """Failures the package's own handler catches: reported, labelled, not what importing does."""
    why = f"optional: the package catches the failure of {unit.api or 'the import'} at {unit.where}"
    return tuple(
        replace(v, explanation=f"{v.explanation} ({why})", evidence={**v.evidence, "timing": "optional"})
        if v.status in ("fail", "warn", "unknown")
        else v
        for v in verdicts
    )


U = TypeVar("U", bound=JudgedUnit)


def settle_candidates(pairs: Sequence[tuple[PlannedUnit | None, U]]) -> list[U]:
    """A caught failure the package goes on from (the next candidate of a list, a fallback, its own
    ``raise``) is a tried candidate, not a failure of the set: its failures become warnings saying so.
    A failure a handler swallows stays one (labelled optional: what the package does without it is not
    followed)."""
    out: list[U] = []
    for i, (unit, judged) in enumerate(pairs):
        after = [
            p
            for p, _ in pairs[i + 1 :]
            if p is not None and unit is not None and any((unit.path, False) in c for c in p.reached_on)
        ]
        if unit is None or not unit.caught or not after:
            out.append(judged)
            continue
        then = (
            after[0].path.split(":", 1)[-1]
            if after[0].how != "raise"
            else f"its own raise at {after[0].where}"
        )
        why = f"a candidate: the package goes on to {then}"
        verdicts = tuple(
            replace(v, status="warn", explanation=f"{v.explanation} ({why})") if v.status == "fail" else v
            for v in judged.verdicts
        )
        out.append(_replaced(judged, verdicts))
    return out


def _replaced(judged: U, verdicts: tuple[Verdict, ...]) -> U:
    changed: Any = replace(judged, verdicts=verdicts)  # type: ignore[type-var]
    return changed  # type: ignore[no-any-return]


def judged_native_verdicts(
    sim: LoaderSimulation, done: Sequence[JudgedUnit], only: Sequence[WheelFacts] | None = None
) -> list[Verdict]:
    """A distribution whose code loads libraries by path, none of which any unit judged: ``unknown``,
    never ``ok`` (a library distribution nothing loads, such as a runtime wheel, never loads)."""
    judged = {u.dist for u in done}
    loaded = {getattr(p, "path", None) for p in sim.loaded.values()}
    out: list[Verdict] = []
    for w in sim.layout.wheels if only is None else only:
        label = dist_label(w)
        paths = [p for p, o in sim.layout.objects.items() if o.wheel is w]
        if not paths or label in judged or any(p in loaded for p in paths) or not w.python:
            continue
        if any(p in sim.not_taken for p in paths) or w.filename in sim.followed:
            continue  # its code, followed, loads none of them here
        calls_load = any(
            e.kind == "load" for m in w.python for evs in (m.events, *(f.events for f in m.functions))
            for e in all_events(evs)
        )  # fmt: skip
        if calls_load:
            text = (f"{label} loads its shared objects ({len(paths)}) in a way abiprobe did not follow: "
                    "none was judged")  # fmt: skip
            out.append(Verdict("sonames", "unknown", text, label, {"objects": paths[:8]}))
    return out


__all__ = [
    "VirtualOutcome",
    "caught_verdicts",
    "judged_native_verdicts",
    "settle_candidates",
    "tried_before",
    "virtual_outcome",
]
