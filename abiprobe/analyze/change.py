"""Which installed distributions a planned change breaks: judged before and after, the same checks.

A distribution the change leaves in place (same name and version) is broken by it when its worst
verdict after the change is ``blocked``, ``unknown`` or ``fail`` and worse than before: its units no
longer load (torchvision built for the torch that was replaced), or its pins no longer hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from abiprobe.analyze.analysis import SetAnalysis
from abiprobe.model.verdict import STATUS_ORDER, Status, Verdict, worst

_BROKEN = ("blocked", "unknown", "fail")


@dataclass(frozen=True)
class BrokenDistribution:
    """A kept distribution the change breaks: its status before and after, and the first reason."""

    label: str
    before: Status
    after: Status
    why: str

    def to_json(self) -> dict[str, str]:
        return {"distribution": self.label, "before": self.before, "after": self.after, "why": self.why}


def _verdicts_of(analysis: SetAnalysis, label: str) -> list[Verdict]:
    own = [v for u in analysis.units if u.dist == label for v in u.verdicts]
    return own + [v for v in analysis.set_verdicts if v.subject == label]


def broken_by_change(
    before: SetAnalysis, after: SetAnalysis, changed: Iterable[str]
) -> tuple[BrokenDistribution, ...]:
    """Kept distributions (labels in both analyses, not in ``changed``) whose status the change worsens."""
    skip = set(changed)
    out = []
    for label in after.wheels:
        if label in skip or label not in before.wheels:
            continue
        old = worst(v.status for v in _verdicts_of(before, label))
        verdicts = _verdicts_of(after, label)
        new = worst(v.status for v in verdicts)
        if new in _BROKEN and STATUS_ORDER[new] > STATUS_ORDER[old]:
            first = next(v for v in verdicts if v.status == new)
            out.append(BrokenDistribution(label, old, new, first.text))
    return tuple(out)
