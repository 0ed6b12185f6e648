"""Static analysis of a wheel set under a Target: verdicts per extension and per wheel, pure and cacheable."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from abiprobe.analyze.checks import (
    cpu_only_verdicts,
    files_verdicts,
    metadata_verdicts,
    provider_verdicts,
    requires_verdicts,
    runtime_selection,
    tag_verdicts,
    unreadable_verdicts,
    wheel_tags,
)
from abiprobe.analyze.explain import (
    driver_verdict,
    gpu_verdicts,
    soname_verdict,
    symbols_verdict,
    version_verdict,
)
from abiprobe.analyze.first_error import LoaderMessage, first_message
from abiprobe.analyze.layout import InstalledObject, dist_label
from abiprobe.analyze.loader import LoaderSimulation, LoadResult
from abiprobe.analyze.profiles import Profile
from abiprobe.analyze.torch_abi import TorchRelease, declared_torch, torch_range_verdicts
from abiprobe.analyze.torch_build import build_torch_verdict, recorded_build_torch
from abiprobe.analyze.unit_outcomes import (
    caught_verdicts,
    judged_native_verdicts,
    settle_candidates,
    tried_before,
    virtual_outcome,
)
from abiprobe.analyze.units import PlannedUnit, Timing
from abiprobe.analyze.variants import cuda_claim_verdicts
from abiprobe.model.facts import WheelFacts
from abiprobe.model.stack import PackageLoading, Stack, loading_digest
from abiprobe.model.target import Target
from abiprobe.model.verdict import CHECKS, STATUS_ORDER, Status, Verdict, unread_verdicts, unsettled, worst

ANALYSIS_SCHEMA_VERSION = 1


# unit timings that leave what importing does as it is (a feature of them fails when it is used)
LATER = frozenset({"first_use", "optional"})


@dataclass(frozen=True)
class UnitAnalysis:
    """Verdicts for one loaded unit: an extension module, or a library torch loads globally."""

    path: str
    dist: str
    kind: str  # "extension" or "preloaded"
    verdicts: tuple[Verdict, ...]
    selected: bool | None = None  # False: the package would not load it on the target GPU
    loader_message: LoaderMessage | None = None  # the loader's first error loading it, as printed
    timing: Timing = "import"  # when the package loads it: at import, on first use, optional, not known
    where: str = ""  # the package's code that loads it (``pkg/ext.py line 12``), when read
    note: str = ""  # how the package chose it (a computed name, a candidate of a list), or why not known

    @property
    def status(self) -> Status:
        return worst(v.status for v in self.verdicts)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "dist": self.dist,
            "kind": self.kind,
            "status": self.status,
            "selected": self.selected,
            "timing": self.timing,
            "where": self.where,
            "note": self.note,
            "loader_message": self.loader_message.to_json() if self.loader_message else None,
            "verdicts": [v.to_json() for v in self.verdicts],
        }


@dataclass(frozen=True)
class SetAnalysis:
    """The verdicts of one candidate set under one target (``ok``: no check failed)."""

    target: Target
    profile: str
    wheels: tuple[str, ...]
    units: tuple[UnitAnalysis, ...]
    set_verdicts: tuple[Verdict, ...]

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        return (*self.set_verdicts, *(v for u in self.units for v in u.verdicts))

    def worst_by_check(self) -> dict[str, Status]:
        result: dict[str, Status] = {}
        for v in self.verdicts:
            if STATUS_ORDER[v.status] >= STATUS_ORDER[result.get(v.check, "ok")]:
                result[v.check] = v.status
        return {c: result[c] for c in CHECKS if c in result}

    @property
    def status(self) -> Status:
        """The set's overall status: fail, unknown (not all was read), blocked (loads, but a declared
        requirement forbids it), warn or ok."""
        return worst(v.status for v in self.verdicts)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "warn")

    @property
    def import_verdicts(self) -> tuple[Verdict, ...]:
        """What importing the set's packages decides: the set verdicts and those of units loaded at
        import or at a time not known (a unit loaded on first use fails later, when it is used; one whose
        failure the package catches, ``optional``, leaves the import as it is)."""
        units = (v for u in self.units if u.timing not in LATER for v in u.verdicts)
        return (*self.set_verdicts, *units)

    @property
    def import_status(self) -> Status:
        """The status of importing the set's packages (see :attr:`import_verdicts`)."""
        return worst(v.status for v in self.import_verdicts)

    @property
    def features(self) -> tuple[UnitAnalysis, ...]:
        """Units loaded on first use, or whose failure the package catches, that will not load (a feature
        that fails when used, while importing works): cupy's cuTENSOR module without libcutensor, numba's
        TBB pool without libtbb."""
        return tuple(u for u in self.units if u.timing in LATER and u.status in ("fail", "system"))

    @property
    def first_error(self) -> LoaderMessage | None:
        """The first error the loader reports importing the set: the first unit, in load order, that
        importing the packages loads and that fails to load (else the first failing unit loaded later)."""
        failing = [
            u
            for u in self.units
            if u.loader_message and u.selected is not False and u.status in ("fail", "system")
        ]
        first = next((u for u in failing if u.timing == "import"), failing[0] if failing else None)
        return first.loader_message if first is not None else None

    def failures(self) -> tuple[Verdict, ...]:
        """Every verdict that is not ok, worst first; of the failures, the loader's first error first."""
        first = self.first_error
        message = first.to_json() if first is not None else None

        def key(v: Verdict) -> tuple[int, int]:
            return (-STATUS_ORDER[v.status], 0 if v.evidence.get("loader_message") == message else 1)

        return tuple(sorted((v for v in self.verdicts if v.status != "ok"), key=key))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": ANALYSIS_SCHEMA_VERSION,
            "target": self.target.key(),
            "profile": self.profile,
            "wheels": list(self.wheels),
            "ok": self.ok,
            "status": self.status,
            "checks": self.worst_by_check(),
            "import_status": self.import_status,
            "first_error": self.first_error.to_json() if self.first_error else None,
            "set_verdicts": [v.to_json() for v in self.set_verdicts],
            "units": [u.to_json() for u in self.units],
        }


def unit_verdicts(sim: LoaderSimulation, result: LoadResult) -> tuple[Verdict, ...]:
    """The loader checks of one unit, plus gpu_arch for every newly loaded object with GPU code."""
    layout, target = sim.layout, sim.target
    verdicts = [
        soname_verdict(result, layout, sim.profile),
        symbols_verdict(result, layout),
        version_verdict(result, sim.profile),
        driver_verdict(result, target),
    ]
    obj = layout.objects[result.path]
    torch = layout.wheel_of("torch")
    if torch is not None and obj.wheel is not torch:
        recorded = recorded_build_torch(obj.wheel, declared_torch(obj.wheel))
        scope = (n.soname for n in result.needed)
        built = build_torch_verdict(result.path, obj.facts, recorded, torch.metadata.version, scope)
        verdicts += [built] if built is not None else []
    py = obj.extension_python
    if isinstance(py, tuple) and target.implementation == "cp" and py != target.python:
        text = f"built for CPython {py[0]}.{py[1]}; the target runs {target.python_tag}"
        verdicts.append(Verdict("tags", "fail", text, result.path, {"extension_python": f"{py[0]}.{py[1]}"}))
    verdicts.extend(gpu_verdicts([obj], target))
    return with_system_symbols(tuple(verdicts))


def with_system_symbols(verdicts: tuple[Verdict, ...]) -> tuple[Verdict, ...]:
    """A unit whose missing libraries the target's system would provide (``system``): the symbols found
    nowhere else may be theirs, so those failures are ``system`` too, saying so."""
    found = next((v for v in verdicts if v.check == "sonames" and v.status == "system"), None)
    if found is None:
        return verdicts
    libs = ", ".join(p["soname"] for p in found.evidence.get("system", ()))
    why = f"may be defined by {libs}, which that system would provide"
    return tuple(
        replace(v, status="system", explanation=f"{v.explanation} ({why})")
        if v.check == "symbols" and v.status == "fail"
        else v
        for v in verdicts
    )


def never_imported(obj: InstalledObject, target: Target) -> bool:
    """An extension tagged for another CPython (``cpython-310`` on 3.12) inside a wheel that does install
    on the target: the import system skips its file name, so the loader never opens it."""
    py = obj.extension_python
    if not (isinstance(py, tuple) and target.implementation == "cp" and py != target.python):
        return False
    tags = wheel_tags(obj.wheel)
    return bool(tags) and any(target.accepts_tag(t) for t in tags)


def _demoted(verdicts: tuple[Verdict, ...], why: str, to: Status = "warn") -> tuple[Verdict, ...]:
    """Failures of a unit the running program never loads become warnings that say why; ``unknown``
    (``to``) for one that nothing abiprobe follows loads (whether the program ever opens it, and which of
    its variants, is not known)."""
    return tuple(
        replace(v, status=to, explanation=f"{v.explanation} ({why})") if v.status in ("fail", "system") else v
        for v in verdicts
    )


def _opened_before(sim: LoaderSimulation, result: LoadResult) -> str | None:
    """Why a unit's missing sonames are not known to be missing: each is the name of a file of the set,
    and a load taken before it, whose path abiprobe cannot follow, may have opened that file already
    (dgl's ``ctypes.CDLL(find_lib_path()[0])`` opens ``libdgl.so`` before the modules needing it)."""
    missing = [n.soname for n in result.missing_sonames]
    before = sim.unfollowed_before.get(result.path, tuple(sim.unfollowed))
    if not missing or not before:
        return None
    files = {n for o in sim.layout.objects.values() for n in (o.filename, o.facts.soname) if n}
    if not all(m in files for m in missing):
        return None
    where = before[-1].where
    return (
        f"the set has {', '.join(missing)}: the load at {where}, whose path abiprobe cannot follow, "
        "may have opened it before this unit"
    )


def _timed(
    verdicts: tuple[Verdict, ...], unit: PlannedUnit, sim: LoaderSimulation, result: LoadResult
) -> tuple[Verdict, ...]:
    """A unit the package loads lazily keeps its failures, saying so; one whose load time is not known
    turns a failure into ``unknown``; so does a pass that rests on an object that a unit of unknown or
    lazy load time brought in (whether it is loaded first cannot be known)."""
    lazy = {k for k, u in sim.loaded_by.items() if sim.timing_of.get(u) not in (None, "import")}
    leaned = sorted(
        {n.soname for n in result.needed if n.how == "loaded" and n.soname in lazy and not n.found_otherwise}
    )
    out: list[Verdict] = []
    for v in verdicts:
        if unit.timing == "unknown" and v.status == "fail":
            why = "which file the package loads, and when, cannot be known statically"
            v = replace(v, status="unknown", explanation=f"{v.explanation} (fails if loaded; {why})",
                        evidence={**v.evidence, "timing": "unknown"})  # fmt: skip
        elif unit.timing == "first_use" and unit.where and v.status in ("fail", "system", "warn"):
            why = f"on first use: loaded lazily by {unit.where}, not by importing the package"
            v = replace(
                v, explanation=f"{v.explanation} ({why})", evidence={**v.evidence, "timing": "first_use"}
            )
        elif v.check == "sonames" and v.status == "ok" and leaned and unit.timing != "import":
            text = f"{leaned[0]} is found only if a unit loaded lazily loads first: the order is not known"
            v = replace(
                v,
                status="unknown",
                explanation=text,
                evidence={"timing": unit.timing, "loaded_first": leaned},
            )
        out.append(v)
    return tuple(out)


def _unit(
    sim: LoaderSimulation,
    unit: PlannedUnit | None,
    result: LoadResult | None,
    done: Sequence[UnitAnalysis] = (),
) -> UnitAnalysis:
    if result is None:
        assert unit is not None
        return _virtual(sim, unit, done)
    obj = sim.layout.objects[result.path]
    verdicts = unit_verdicts(sim, result)
    if unit is not None:
        verdicts = _timed(verdicts, unit, sim, result)
    selected = runtime_selection(result.path, sim.target, sim.rules)
    if unit is not None and unit.how == "opened":
        verdicts = _demoted(verdicts, f"if it is opened: {unit.note}", "unknown")
    if (why := _opened_before(sim, result)) is not None:
        verdicts = _demoted(verdicts, why, "unknown")
    if selected is False:
        verdicts = _demoted(verdicts, "the package does not load it on this GPU")
    elif never_imported(obj, sim.target):
        py = obj.extension_python
        assert isinstance(py, tuple)
        major, minor = sim.target.python
        why = f"CPython {major}.{minor} never imports a cpython-{py[0]}{py[1]} module"
        verdicts = _demoted(verdicts, why)
        selected = False
    kind = (
        "preloaded" if result.is_global else ("library" if unit is not None and unit.by_path else "extension")
    )
    message = first_message(result, sim.layout, by_path=kind != "extension")
    if message is not None and unit is not None and unit.by_path and unit.where:
        message = replace(message, via=f"{unit.api} at {unit.where}")
    if message is not None:
        verdicts = _with_message(verdicts, message)
    timing: Timing = "import" if unit is None else unit.timing
    if unit is not None and unit.caught and worst(v.status for v in verdicts) in ("fail", "unknown"):
        verdicts, timing = caught_verdicts(verdicts, unit), "optional"  # the package goes on without it
    note = _note(unit, done) if unit is not None else ""
    return UnitAnalysis(
        result.path, obj.dist, kind, verdicts, selected, message, timing, unit.where if unit else "", note
    )


def _note(unit: PlannedUnit, done: Sequence[UnitAnalysis]) -> str:
    """The unit's own note, and the candidates the package tried before it that failed."""
    tried = "; ".join(f"{k.split(':', 1)[-1] if k.startswith('soname:') else k}: {m}"
                      for k, m in tried_before(unit, done))  # fmt: skip
    parts = [unit.note, f"loaded after earlier candidates failed ({tried})" if tried else ""]
    return "; ".join(p for p in parts if p)


def _virtual(sim: LoaderSimulation, unit: PlannedUnit, done: Sequence[UnitAnalysis]) -> UnitAnalysis:
    """A unit with no object of the set behind it (a file the set lacks, a bare name, a path not
    followed, the package's own ``raise``)."""
    out = virtual_outcome(sim, unit, done)
    verdicts, timing = out.verdicts, unit.timing
    if unit.caught and worst(v.status for v in verdicts) in ("fail", "unknown"):
        verdicts, timing = caught_verdicts(verdicts, unit), "optional"
    elif timing == "first_use" and unit.where:
        why = f"on first use: loaded lazily by {unit.where}, not by importing the package"
        verdicts = tuple(replace(v, explanation=f"{v.explanation} ({why})") if v.status != "ok" else v
                         for v in verdicts)  # fmt: skip
    path = (
        unit.path.split(":", 1)[1] if unit.how in ("soname", "unresolved", "raise", "fallback") else unit.path
    )
    return UnitAnalysis(
        path, out.dist, out.kind, verdicts, None, out.message, timing, unit.where, _note(unit, done)
    )


_MESSAGE_CHECK = {"needed": ("sonames",), "version": ("symbol_versions",), "symbol": ("symbols", "driver")}


def _with_message(verdicts: tuple[Verdict, ...], message: LoaderMessage) -> tuple[Verdict, ...]:
    """The loader's first message put in the evidence of the failing verdict it comes from (the one the
    matrix stores), so it outlives the unit analysis."""
    checks = _MESSAGE_CHECK[message.kind]
    out: list[Verdict] = []
    placed = False
    for v in verdicts:
        if not placed and v.check in checks and v.status in ("fail", "warn"):
            v = replace(v, evidence={**v.evidence, "loader_message": message.to_json()})
            placed = True
        out.append(v)
    return tuple(out)


def spare_partial_gpu(units: Sequence[UnitAnalysis]) -> list[UnitAnalysis]:
    """A wheel with an extension that runs natively on the target GPU is usable there: its other
    extensions with no code for that GPU (sgl-kernel's Hopper-only ``flash_ops`` on a Blackwell card)
    lose only their own kernels, so their gpu_arch failure becomes a warning that says so."""
    native = {
        u.dist
        for u in units
        if u.selected is not False
        for v in u.verdicts
        if v.check == "gpu_arch" and v.evidence.get("arch_status") == "native"
    }
    out: list[UnitAnalysis] = []
    for u in units:
        if u.dist in native and any(v.check == "gpu_arch" and v.status == "fail" for v in u.verdicts):
            why = f"only this module's kernels are missing: other extensions of {u.dist} run natively here"
            verdicts = tuple(
                replace(v, status="warn", explanation=f"{v.explanation} ({why})")
                if v.check == "gpu_arch" and v.status == "fail"
                else v
                for v in u.verdicts
            )
            u = replace(u, verdicts=verdicts)
        out.append(u)
    return out


def analyze_set(
    wheels: Sequence[WheelFacts],
    target: Target,
    profile: Profile,
    torch_releases: Sequence[TorchRelease] = (),
    *,
    stack: Stack,
) -> SetAnalysis:
    """Every check of a candidate set under a target: pure, no I/O. ``torch_releases``: torch releases
    known besides the set's own, against which each kernel wheel's torch range is judged; ``stack``: what
    couples the set's versions, picks its providers and says how its packages load."""
    sim = LoaderSimulation(wheels, target, profile, stack.loading())
    done: list[UnitAnalysis] = []
    planned: list[PlannedUnit | None] = []
    for unit, r, _ in sim.load_all():
        done.append(_unit(sim, unit, r, done))
        planned.append(unit)
    units = spare_partial_gpu(settle_candidates(list(zip(planned, done, strict=True))))
    units = [u for u in units if u.kind != "preloaded" or u.status != "ok"]
    set_verdicts: list[Verdict] = [
        *metadata_verdicts(wheels, stack),
        *tag_verdicts(wheels, target),
        *requires_verdicts(wheels, target),
        *files_verdicts(sim.layout),
        *unreadable_verdicts(wheels),
        *judged_native_verdicts(sim, done),
    ]
    set_verdicts += torch_range_verdicts(wheels, torch_releases)
    set_verdicts += cuda_claim_verdicts(wheels, target)
    judged = {v.subject for u in units for v in u.verdicts if v.check == "gpu_arch"}
    set_verdicts += provider_verdicts(wheels, target, judged, stack)
    set_verdicts += cpu_only_verdicts(wheels, target, stack)
    return SetAnalysis(
        target=target,
        profile=profile.name,
        wheels=tuple(dist_label(w) for w in wheels),
        units=tuple(units),
        set_verdicts=tuple(set_verdicts),
    )


def with_unread(analysis: SetAnalysis, unread: Sequence[tuple[str, str]]) -> SetAnalysis:
    """The analysis of a set some of whose wheels (label, reason) could not be read: what they may
    provide is unknown, and every check that needs their bytes is too."""
    if not unread:
        return analysis
    labels = [label for label, _ in unread]
    units = tuple(replace(u, verdicts=tuple(unsettled(u.verdicts, labels))) for u in analysis.units)
    extra = [v for label, reason in unread for v in unread_verdicts(label, reason)]
    set_verdicts = (*unsettled(analysis.set_verdicts, labels), *extra)
    return replace(analysis, wheels=(*analysis.wheels, *labels), units=units, set_verdicts=set_verdicts)


AnalysisCache = MutableMapping[tuple[str, tuple[str, ...], str, str], tuple[UnitAnalysis, ...]]
_SIMULATIONS: dict[tuple[tuple[str, ...], str, str], LoaderSimulation] = {}


def extension_cache_key(
    wheel: WheelFacts,
    providers: Sequence[WheelFacts],
    target: Target,
    profile: Profile,
    rules: Sequence[PackageLoading],
) -> tuple[str, tuple[str, ...], str, str]:
    """(wheel sha256, sorted provider sha256s, target key, profile digest and the stack's loading data):
    what an analysis depends on.

    A provider with unread members (partial facts, which only ever gain members) is also keyed by them."""
    setup = f"{profile.digest()} {loading_digest(rules)}"
    return (wheel.sha256, tuple(sorted(_facts_key(p) for p in providers)), target.key(), setup)


def _facts_key(facts: WheelFacts) -> str:
    gpu = [f"gpu-unread:{e.path}" for e in facts.elf if e.gpu_unread]
    return "\0".join((facts.sha256, *facts.unread, *gpu))


def analyze_extension(
    wheel: WheelFacts,
    providers: Sequence[WheelFacts],
    target: Target,
    profile: Profile,
    cache: AnalysisCache | None,
    rules: Sequence[PackageLoading],
) -> tuple[UnitAnalysis, ...]:
    """The extensions of one wheel loaded on top of ``providers`` (e.g. a torch wheel + its nvidia wheels).

    The solver's cheap pairwise form: the providers' global preload state is simulated once and reused for
    every kernel wheel checked against it, and results are memoised in ``cache`` by
    :func:`extension_cache_key`. The wheel itself must not add libraries that torch preloads.
    """
    key = extension_cache_key(wheel, providers, target, profile, rules)
    if cache is not None and key in cache:
        return cache[key]
    sim_key = (key[1], key[2], key[3])
    base = _SIMULATIONS.get(sim_key)
    if base is None:
        if len(_SIMULATIONS) > 64:
            _SIMULATIONS.clear()
        base = LoaderSimulation(providers, target, profile, rules)
        _SIMULATIONS[sim_key] = base
    sim = base.with_wheel(wheel)
    pairs: list[tuple[PlannedUnit | None, UnitAnalysis]] = []
    for u, r, _ in sim.load_plan(sim.plan([wheel])):
        pairs.append((u, _unit(sim, u, r, [a for _, a in pairs])))
    units = tuple(spare_partial_gpu(settle_candidates(pairs)))
    unjudged = judged_native_verdicts(sim, units, [wheel])
    if unjudged:  # the pair's verdicts are its units': native code nothing followed loads is one too
        units += (UnitAnalysis(dist_label(wheel), dist_label(wheel), "unjudged", tuple(unjudged)),)
    if cache is not None:
        cache[key] = units
    return units
