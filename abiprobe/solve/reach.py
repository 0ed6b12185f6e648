"""Which libraries of added wheels the simulated loader can reach, read to a fixed point.

Of a wheel added to a set (torch's nvidia runtime wheels, or what pip would install beside the named
items) only the libraries the loader may open are read: those torch preloads and those whose file name
some read object needs (DT_NEEDED), until reading finds nothing new. cuDNN's dlopen'd engines or
triton's compiler libraries stay unread: no static verdict looks at them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from abiprobe.analyze.preloads import PRELOADED
from abiprobe.model.facts import WheelInfo
from abiprobe.solve.candidates import StackCandidate


class PartialReader(Protocol):
    """What reading needs of a solve's collector: partial reads, several at once."""

    def prefetch(self, scs: Sequence[StackCandidate], read: Callable[[str], bool] | None = None) -> None: ...

    def runtime_info(self, sc: StackCandidate, read: Callable[[str], bool]) -> WheelInfo | None: ...


class Reach:
    """``reach(path)``: whether the loader may open the library installed at ``path``; ``settle`` reads
    what the libraries read so far need, until nothing more is reached."""

    def __init__(self, reader: PartialReader, needed: Callable[[], set[str]]) -> None:
        self.reader = reader
        self._make_needed = needed
        self._needed: set[str] | None = None

    @property
    def needed(self) -> set[str]:
        """Sonames needed so far (made on first use, before any reader starts, which only read it)."""
        if self._needed is None:
            self._needed = self._make_needed()
        return self._needed

    def __call__(self, path: str) -> bool:
        return bool(PRELOADED.match(path)) or posixpath.basename(path) in self.needed

    def info(self, sc: StackCandidate) -> WheelInfo | None:
        return self.reader.runtime_info(sc, self)

    def read(self, wheels: Sequence[StackCandidate]) -> list[StackCandidate]:
        """The wheels read (at once) with what they reach so far, then settled; unread ones keep no info."""
        self.needed  # noqa: B018 - made before the readers start
        self.reader.prefetch(wheels, self)
        return self.settle([replace(sc, info=self.info(sc)) for sc in wheels])

    def settle(self, chosen: list[StackCandidate]) -> list[StackCandidate]:
        needed = self.needed
        while True:
            for sc in chosen:
                if sc.summary is not None:
                    needed.update(sc.summary.needed)
            stale = [
                i
                for i, sc in enumerate(chosen)
                if sc.summary is not None and any(self(p) for p in sc.summary.unread)
            ]
            if not stale:
                return chosen
            self.reader.prefetch([chosen[i] for i in stale], self)
            for i in stale:
                chosen[i] = replace(chosen[i], info=self.info(chosen[i]))
