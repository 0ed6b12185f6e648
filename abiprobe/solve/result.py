"""What a solve produced: the matrix, the chosen set, which indexes answered, and what was ruled out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from abiprobe.solve.candidates import Exclusion
from abiprobe.solve.matrix import Matrix
from abiprobe.solve.override import OverrideSet
from abiprobe.solve.provider import Resolution

EXIT_FOUND, EXIT_NONE, EXIT_INCOMPLETE = 0, 1, 3


@dataclass(frozen=True)
class IndexStatus:
    """One index over the whole solve: did it answer, and if not, why."""

    index: str
    url: str
    answered: bool
    error: str | None = None
    from_cache: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "url": self.url,
            "answered": self.answered,
            "error": self.error,
            "from_cache": self.from_cache,
        }


@dataclass(frozen=True)
class NearMiss:
    """A candidate newer than the one chosen (or any, when none was), and what ruled it out."""

    role: str
    id: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"role": self.role, "id": self.id, "reason": self.reason}


@dataclass(frozen=True)
class SolveResult:
    matrix: Matrix
    resolution: Resolution
    indexes: tuple[IndexStatus, ...] = ()
    excluded: tuple[Exclusion, ...] = ()
    near_misses: tuple[NearMiss, ...] = ()
    problems: tuple[str, ...] = field(default=())
    override: OverrideSet | None = None  # the newest set that loads if declared pins were overridden

    @property
    def complete(self) -> bool:
        return all(i.answered for i in self.indexes) and not self.problems

    @property
    def exit_code(self) -> int:
        if not self.complete:
            return EXIT_INCOMPLETE
        return EXIT_FOUND if self.resolution.chosen is not None else EXIT_NONE
