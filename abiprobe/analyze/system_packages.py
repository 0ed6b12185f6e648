"""Which distribution packages usually ship a system library: what a target system must provide for a
library its profile lacks (abiprobe/data/system_packages.json, with where each name came from)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class SystemPackages:
    """The packages that ship one soname on the two big Linux families."""

    soname: str
    debian: str
    rhel: str
    note: str = ""

    def text(self) -> str:
        extra = f"; {self.note}" if self.note else ""
        return f"Debian/Ubuntu: {self.debian}; RHEL family: {self.rhel}{extra}"

    def to_json(self) -> dict[str, str]:
        return {"soname": self.soname, "debian": self.debian, "rhel": self.rhel, "note": self.note}


@lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, str]]:
    text = resources.files("abiprobe").joinpath("data/system_packages.json").read_text()
    sonames: dict[str, dict[str, str]] = json.loads(text)["sonames"]
    return sonames


def system_packages(soname: str) -> SystemPackages | None:
    """The packages that usually ship ``soname``, or None when no distribution package is known to."""
    row = _table().get(soname)
    if row is None:
        return None
    return SystemPackages(soname, row["debian"], row["rhel"], row.get("note", ""))
