"""What a solve produced: the matrix, the chosen set, which indexes answered, what was ruled out, and
the whole install of each set the lock and the probe jobs are made from. A value: nothing here reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from abiprobe.model.candidate import IndexFile
from abiprobe.solve.candidates import Exclusion, StackCandidate
from abiprobe.solve.matrix import Matrix
from abiprobe.solve.override import OverrideSet
from abiprobe.solve.resolver import Resolution
from abiprobe.solve.twins import TwinFile
from abiprobe.solve.unread import UnreadWheel

EXIT_FOUND, EXIT_NONE, EXIT_INCOMPLETE = 0, 1, 3
# which sets of the matrix get their whole install resolved (beside the chosen one, always)
CellSelection = Literal["chosen", "ok", "all"]


@dataclass(frozen=True)
class IndexStatus:
    """One index over the whole solve: did it answer (live, or from pages in the cache: ``cached_at`` the
    oldest one's fetch time), and what it could not answer: ``error`` (the index failed; with
    ``answered``, stale cached pages stood in) and ``uncached`` (pages an offline run did not have)."""

    index: str
    url: str
    answered: bool
    error: str | None = None
    from_cache: bool = False
    cached_at: float | None = None
    uncached: tuple[str, ...] = ()

    @property
    def whole(self) -> bool:
        """Every page this index was asked for came back, live or fresh from the cache."""
        return self.answered and self.error is None and not self.uncached

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "url": self.url,
            "answered": self.answered,
            "error": self.error,
            "from_cache": self.from_cache,
            "cached_at": self.cached_at,
            "uncached": list(self.uncached),
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
class EmptyRole:
    """A stack role with no candidate at all: the names looked for, the indexes asked, what they listed."""

    role: str
    names: tuple[str, ...]
    asked: tuple[str, ...]
    listed: int = 0

    @property
    def explanation(self) -> str:
        what = " or ".join(self.names)
        where = ", ".join(self.asked) or "no index"
        if self.listed:
            return (
                f"no {self.role} candidate: {where} list {self.listed} {what} wheel(s), "
                "none for this target (see the exclusions)"
            )
        return f"no {self.role} candidate: no index lists {what} (asked {where})"

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "names": list(self.names),
            "asked": list(self.asked),
            "listed": self.listed,
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class SetInstall:
    """Every wheel an install of one set gets: the stack wheels (by role), the runtime wheels its base
    pins, then the rest of the install (numpy, sympy, ...); ``note`` says why it could not be completed."""

    stack: tuple[StackCandidate, ...]
    runtime: tuple[StackCandidate, ...] = ()
    rest: tuple[StackCandidate, ...] = ()
    note: str = ""

    @property
    def wheels(self) -> tuple[StackCandidate, ...]:
        return (*self.stack, *self.runtime, *self.rest)

    @property
    def added(self) -> tuple[StackCandidate, ...]:
        """What the install brings beside the stack wheels."""
        return (*self.runtime, *self.rest)


@dataclass(frozen=True)
class SolveResult:
    """One solve, as a value: the lock, the matrix files and the probe jobs are made from it alone."""

    matrix: Matrix
    resolution: Resolution
    indexes: tuple[IndexStatus, ...] = ()
    excluded: tuple[Exclusion, ...] = ()
    near_misses: tuple[NearMiss, ...] = ()
    problems: tuple[str, ...] = field(default=())
    unread: tuple[UnreadWheel, ...] = ()  # the problems that are wheels whose bytes could not be read
    override: OverrideSet | None = None  # the newest set that loads if declared pins were overridden
    empty_roles: tuple[EmptyRole, ...] = ()
    twins: tuple[TwinFile, ...] = ()
    # the whole install of the chosen set and of each set selected for probing, by member ids
    installs: Mapping[tuple[str, ...], SetInstall] = field(default_factory=dict)
    # the listed files whose facts came from range reads (the next solve asks whether they still hold)
    range_read: tuple[IndexFile, ...] = ()
    listed: tuple[str, ...] = ()  # every project the solve listed (the next solve asks about their pages)

    # derived once, when the value is made
    chosen_ids: tuple[str, ...] | None = field(init=False, compare=False)  # the chosen set's ids, stack order
    complete: bool = field(init=False, compare=False)  # every index answered in full, no problem
    exit_code: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        chosen = self.resolution.chosen
        ids = None if chosen is None else tuple(chosen[r] for r in self.matrix.stack.roles)
        complete = all(i.whole for i in self.indexes) and not self.problems
        code = EXIT_INCOMPLETE if not complete else EXIT_FOUND if chosen is not None else EXIT_NONE
        object.__setattr__(self, "chosen_ids", ids)
        object.__setattr__(self, "complete", complete)
        object.__setattr__(self, "exit_code", code)

    def install(self, members: Sequence[str]) -> SetInstall:
        """The whole install of the set with these group ids (in stack order)."""
        try:
            return self.installs[tuple(members)]
        except KeyError:
            raise KeyError(f"no install was resolved for {' + '.join(members)}") from None
