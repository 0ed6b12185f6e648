"""The matrix's Evaluator over the static analysis: the base set alone, and one group on top of it.

A member group's wheels are analysed with :func:`analyze_extension` on top of the base wheel plus its
runtime wheels (the nvidia wheels torch preloads), so the base's global state is simulated once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from abiprobe import __version__
from abiprobe.analyze.profiles import Profile
from abiprobe.model.facts import WheelFacts, WheelSummary
from abiprobe.model.stack import Stack
from abiprobe.model.target import Target
from abiprobe.model.verdict import Verdict, unread_verdicts, unsettled
from abiprobe.solve.candidates import StackCandidate
from abiprobe.solve.codedigest import code_digest
from abiprobe.solve.matrix import Group
from abiprobe.solve.ports import AnalysisStore, FullFacts

if TYPE_CHECKING:
    from abiprobe.analyze.analysis import AnalysisCache
    from abiprobe.analyze.torch_abi import TorchRelease

# The loader simulation (abiprobe.analyze.analysis and what it imports, a tenth of the modules a solve
# loads) is imported by the first verdict list that is not stored: a warm solve never needs it.

RuntimeFor = Callable[[Group], Sequence[WheelFacts]]
RuntimeKeys = Callable[[Group], Sequence[WheelSummary]]
# (wheel label, why it could not be read) of the wheels a group needs that were not read
Unread = Callable[[Group], Sequence[tuple[str, str]]]
ANALYSIS_STORE_VERSION = 1
# Stored verdicts are keyed by the code of this module's import closure (derived, never listed by hand).
VERDICT_ENTRY = "abiprobe.solve.evaluate"


def _no_reader(_group: Group) -> Sequence[tuple[str, str]]:
    return ()


class StaticEvaluator:
    """Implements ``matrix.Evaluator`` with the loader simulation; results are memoised by sha256s."""

    def __init__(
        self,
        target: Target,
        profile: Profile,
        runtime_for: RuntimeFor,
        store: AnalysisStore | None = None,
        runtime_keys: RuntimeKeys | None = None,
        torch_candidates: Sequence[StackCandidate] = (),
        unread: Unread = _no_reader,
        runtime_unread: Unread = _no_reader,
        *,
        stack: Stack,
        full: FullFacts,
    ) -> None:
        self.target, self.profile, self.runtime_for = target, profile, runtime_for
        self.full = full  # the full facts behind the groups' summaries, loaded when an analysis runs
        self.stack = stack  # its companions, providers and loading data decide verdicts
        self.rules = stack.loading()
        self.runtime_keys = runtime_keys
        self.unread, self.runtime_unread = unread, runtime_unread
        # every torch the matrix has a row for: the releases a kernel's torch range is judged against
        self.torch_candidates = tuple(c for c in torch_candidates if c.name == "torch")
        self._releases: tuple[TorchRelease, ...] | None = None
        self.cache: AnalysisCache = {}
        self.store = store
        self.analyses_run = 0  # verdict lists computed by the loader simulation
        self.analyses_stored = 0  # verdict lists served from the store

    def _key(self, kind: str, groups: Sequence[Group], base: Group) -> str | None:
        """Digest of everything a verdict list depends on; None when a wheel has no known sha256.

        Built from summaries alone, so a stored verdict is found without loading any full facts."""
        shas = [[w.summary.sha256 if w.summary is not None else "" for w in g.wheels] for g in groups]
        own = [w.summary for w in base.wheels if w.summary is not None]
        runtime = self.runtime_keys(base) if self.runtime_keys is not None else self.runtime_for(base)
        loaded = [*own, *runtime]
        if any(not sha for group in shas for sha in group) or any(not p.sha256 for p in loaded):
            return None
        if self.runtime_unread(base):  # not stored: a set missing a wheel is keyed like one without it
            return None
        doc = {
            "version": ANALYSIS_STORE_VERSION,
            "abiprobe": __version__,
            "code": code_digest(VERDICT_ENTRY),
            "kind": kind,
            "groups": shas,
            "providers": sorted(p.sha256 for p in loaded),
            "target": self.target.key(),
            "profile": self.profile.digest(),
            "stack": self.stack.digest(),
        }
        if kind == "pair" and self.torch_candidates:
            doc["torch_releases"] = sorted(
                c.summary.sha256 if c.summary else c.key for c in self.torch_candidates
            )
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def _remembered(self, key: str | None, compute: Callable[[], list[Verdict]]) -> list[Verdict]:
        """The verdicts stored under ``key``, else computed (and stored), each counted."""

        def run() -> list[Verdict]:
            self.analyses_run += 1
            return compute()

        def stored(doc: list[dict[str, Any]]) -> list[Verdict]:
            self.analyses_stored += 1
            return [Verdict.from_json(v) for v in doc]

        if self.store is None:
            return run()
        return self.store.memoized(key, run, lambda vs: [v.to_json(rendered=False) for v in vs], stored)

    def _facts(self, wheels: Iterable[StackCandidate]) -> list[WheelFacts]:
        """The full facts of those ``wheels`` that have them."""
        return [f for w in wheels if w.info is not None and (f := self.full.full(w.info)) is not None]

    def _base_set(self, base: Group) -> list[WheelFacts]:
        own = self._facts(base.wheels)
        return [*own, *self.runtime_for(base)]

    def base(self, base: Group) -> Sequence[Verdict]:
        key = self._key("base", [base], base)
        return self._remembered(key, lambda: self._base(base, self._base_set(base)))

    def _missing(self, *groups: Group) -> list[tuple[str, str]]:
        """Every wheel the analysis of ``groups`` (the base first) needs but could not read."""
        out = [m for g in groups for m in self.unread(g)]
        return out + list(self.runtime_unread(groups[0]))

    def _settle(self, verdicts: list[Verdict], missing: Sequence[tuple[str, str]]) -> list[Verdict]:
        """Verdicts of a set with wheels unread: what they may provide is unknown, and so are they."""
        unknown = [v for label, reason in missing for v in unread_verdicts(label, reason)]
        return unsettled(verdicts, [label for label, _ in missing]) + unknown

    def _base(self, base: Group, loaded: list[WheelFacts]) -> list[Verdict]:
        from abiprobe.analyze.analysis import analyze_set

        missing = self._missing(base)
        if not loaded:
            return self._settle([], missing)
        analysis = analyze_set(loaded, self.target, self.profile, stack=self.stack)
        keep = [v for v in analysis.verdicts if v.check != "requires"]
        return self._settle(keep, missing)

    def pair(self, base: Group, member: Group) -> Sequence[Verdict]:
        key = self._key("pair", [base, member], base)
        return self._remembered(key, lambda: self._pair(base, member, self._base_set(base)))

    def releases(self) -> tuple[TorchRelease, ...]:
        """The matrix's torch rows as releases (their facts are loaded once, on the first cold pair)."""
        if self._releases is None:
            from abiprobe.analyze.torch_abi import releases_of

            self._releases = releases_of(self._facts(self.torch_candidates))
        return self._releases

    def _pair(self, base: Group, member: Group, loaded: list[WheelFacts]) -> list[Verdict]:
        from abiprobe.analyze.analysis import analyze_extension
        from abiprobe.analyze.checks import (
            first_use_gpu_verdicts,
            metadata_verdicts,
            tag_verdicts,
            unreadable_verdicts,
        )
        from abiprobe.analyze.torch_abi import torch_range_verdicts
        from abiprobe.analyze.variants import cuda_claim_verdicts

        wheels = self._facts(member.wheels)
        verdicts: list[Verdict] = [
            *metadata_verdicts(wheels, self.stack),
            *tag_verdicts(wheels, self.target),
            *unreadable_verdicts(wheels),
            *cuda_claim_verdicts(wheels, self.target),
        ]
        for w in wheels:
            for unit in analyze_extension(w, loaded, self.target, self.profile, self.cache, self.rules):
                verdicts.extend(_at_import(unit.timing, unit.verdicts, unit.kind))
        # the provider flashinfer picks for the target: its modules' GPU code, from its own bytes
        chosen = {p.chosen for p in member.arch_wheels if p.chosen}
        judged = {v.subject for v in verdicts if v.check == "gpu_arch"}
        for w in wheels:
            if canonicalize_name(w.metadata.name) in chosen:
                verdicts += first_use_gpu_verdicts(w, self.target, judged)
        torch = [p for p in loaded if p.metadata.name.lower() == "torch"]
        verdicts += torch_range_verdicts([*torch, *wheels], self.releases())
        return self._settle(verdicts, self._missing(base, member))


def _at_import(timing: str, verdicts: Sequence[Verdict], kind: str = "") -> list[Verdict]:
    """A unit's verdicts as the set's cell counts them: a unit loaded on first use, or whose failure the
    package catches, does not decide whether the set imports (as ``check``'s headline): its failure (or
    a load not followed) is a feature that may not load, a warning of the cell with its words kept. So is
    the package's own error on first use once only libraries the system's search must find were missing
    (an optional backend's runtime the user installs, flashinfer's NIXL): no wheel of the set could
    change it."""
    from abiprobe.analyze.analysis import LATER

    if timing not in LATER:
        return list(verdicts)

    def system_only(v: Verdict) -> bool:
        tried = v.evidence.get("candidates") or ()
        return kind == "raise" and bool(tried) and all("/" not in str(c.get("unit", "/")) for c in tried)

    return [
        replace(v, status="warn", explanation=f"a feature that may not load ({timing}): {v.explanation}")
        if v.status == "unknown"
        or (timing == "optional" and v.status in ("fail", "system"))
        or (v.status == "fail" and system_only(v))
        else v
        for v in verdicts
    ]
