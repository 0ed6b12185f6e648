"""The matrix's Evaluator over the static analysis: the base set alone, and one group on top of it.

A member group's wheels are analysed with :func:`analyze_extension` on top of the base wheel plus its
runtime providers (the nvidia wheels torch preloads), so the base's global state is simulated once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from abiprobe.analyze import AnalysisCache, analyze_extension, analyze_set
from abiprobe.analyze.checks import imports_torch_symbols, metadata_verdicts, tag_verdicts, torch_pin_verdict
from abiprobe.facts import WheelFacts
from abiprobe.profiles import Profile
from abiprobe.solve.matrix import Group
from abiprobe.target import Target
from abiprobe.verdict import Verdict

RuntimeFor = Callable[[Group], Sequence[WheelFacts]]


def _unknown(group: Group) -> list[Verdict]:
    missing = [w.label() for w in group.wheels if w.facts is None]
    if not missing:
        return []
    text = f"no facts for {', '.join(missing)} (the wheel could not be read)"
    return [Verdict("sonames", "unknown", text, subject=group.id)]


class StaticEvaluator:
    """Implements ``matrix.Evaluator`` with the loader simulation; results are memoised by sha256s."""

    def __init__(self, target: Target, profile: Profile, runtime_for: RuntimeFor) -> None:
        self.target, self.profile, self.runtime_for = target, profile, runtime_for
        self.cache: AnalysisCache = {}

    def _providers(self, base: Group) -> list[WheelFacts]:
        own = [w.facts for w in base.wheels if w.facts is not None]
        return [*own, *self.runtime_for(base)]

    def base(self, base: Group) -> Sequence[Verdict]:
        providers = self._providers(base)
        if not providers:
            return _unknown(base)
        analysis = analyze_set(providers, self.target, self.profile)
        keep = [v for v in analysis.verdicts if v.check != "requires"]
        return keep + _unknown(base)

    def pair(self, base: Group, member: Group) -> Sequence[Verdict]:
        providers = self._providers(base)
        wheels = [w.facts for w in member.wheels if w.facts is not None]
        verdicts: list[Verdict] = [*metadata_verdicts(wheels), *tag_verdicts(wheels, self.target)]
        for w in wheels:
            for unit in analyze_extension(w, providers, self.target, self.profile, self.cache):
                verdicts.extend(unit.verdicts)
            pin = torch_pin_verdict(w, imports_torch_symbols(w))
            if pin is not None:
                verdicts.append(pin)
        return verdicts + _unknown(member) + _unknown(base)
