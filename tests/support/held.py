"""The ``FullFacts`` port of a test whose wheels' facts are all held in memory (``WheelInfo.of``), and a
set of built wheel files judged as ``check`` judges it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from abiprobe.model.facts import WheelFacts, WheelInfo

if TYPE_CHECKING:
    from abiprobe.analyze.analysis import SetAnalysis
    from abiprobe.analyze.profiles import Profile
    from abiprobe.model.target import Target


class HeldFacts:
    """Full facts as each info holds them; an info that holds none is a mistake of the test."""

    def full(self, info: WheelInfo) -> WheelFacts | None:
        assert info.held is not None, f"{info.summary.filename}: no facts held"
        return info.held


HELD = HeldFacts()


def _built_in_unread() -> frozenset[str]:
    from abiprobe.model.stack import default_stack

    return default_stack().unread_sources()


# the packages whose Python sources a read under the built-in stack's rules leaves out
BUILT_IN_UNREAD = _built_in_unread()


def judged_set(paths: Sequence[Path], target: Target, profile: Profile) -> SetAnalysis:
    """The set of the wheel files ``paths`` (their facts read as ``check`` reads them) judged for the
    target under the built-in stack."""
    from abiprobe.analyze.analysis import analyze_set
    from abiprobe.binary.wheel import wheel_facts_from_path
    from abiprobe.model.stack import default_stack

    facts = [wheel_facts_from_path(p, unread_sources=BUILT_IN_UNREAD) for p in paths]
    return analyze_set(facts, target, profile, stack=default_stack())
