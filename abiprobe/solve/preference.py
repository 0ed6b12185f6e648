"""The order a closure resolution picks projects in, and how long it may search: pip's rules, our code.

Facts from pip's resolvelib provider (``get_preference`` / ``narrow_requirement_selection``, pip 26) and
its resolver (``max_rounds``): the current backtrack causes are decided first, and a project that keeps
turning up unpinned in conflicts is promoted after five; then projects with a direct requirement (here:
a named wheel), pinned ones (``==`` without a wildcard), upper-bounded ones (``<``, ``<=``, ``~=``,
``==X.*``), the user's own requirements in the order given, constrained before free, then by name.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# pip 26 passes 200,000 rounds (earlier releases 2,000,000); a round pins or backtracks one project.
MAX_ROUNDS = 200_000
CONFLICT_PROMOTION = 5  # conflicts an unpinned project takes part in before it is decided early


def _base(identifier: str) -> str:
    return identifier.split("[", 1)[0]


class PreferenceOrder:
    """pip's selection order for a resolvelib provider whose requirements carry ``specifier`` and
    ``root`` (the exact wheel a named item fixes) and identify projects by name (``name[extra]``)."""

    def __init__(self, requested: Sequence[str] = ()) -> None:
        self.requested = {name: i for i, name in enumerate(requested)}
        self._conflicts: Counter[str] = Counter()
        self._promoted: set[str] = set()

    def narrow(
        self, identifiers: Iterable[str], resolutions: Mapping[str, Any], backtrack_causes: Sequence[Any]
    ) -> Iterable[str]:
        """The backtrack causes when any are open, else the promoted projects, else every identifier."""
        causes: set[str] = set()
        for info in backtrack_causes:
            names = [info.requirement.ident]
            if info.parent is not None:
                names.append(info.parent.ident)
            for name in names:
                causes.add(name)
                if name not in resolutions:
                    self._conflicts[name] += 1
                    if self._conflicts[name] >= CONFLICT_PROMOTION:
                        self._promoted.add(name)
        ids = list(identifiers)
        open_causes = [i for i in ids if i in causes]
        if open_causes:
            return open_causes
        promoted = [i for i in ids if i in self._promoted]
        return promoted or ids

    def key(self, identifier: str, information: Mapping[str, Iterable[Any]]) -> tuple[object, ...]:
        """The sort key (lowest first) of one identifier, from the requirements on it so far."""
        reqs = [info.requirement for info in information.get(identifier, ())]
        direct = any(getattr(r, "root", None) is not None for r in reqs)
        operators = [(s.operator, s.version) for r in reqs for s in r.specifier]
        pinned = any(op in ("==", "===") and "*" not in ver for op, ver in operators)
        upper = any(op in ("<", "<=", "~=") or (op == "==" and "*" in ver) for op, ver in operators)
        order = self.requested.get(_base(identifier), math.inf)
        return (identifier not in self._promoted, not direct, not pinned, not upper, order,
                not operators, identifier)  # fmt: skip
