"""A wheel set laid out as one site-packages: who installs which file, where each ELF object sits."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from abiprobe.binary.wheel_members import in_prefix, installed_path, site_relative
from abiprobe.model.facts import ElfFacts, WheelFacts, WheelSummary

_EXT_SUFFIX = re.compile(r"\.(?:cpython-(?P<ver>\d)(?P<minor>\d+)[a-z]*-[A-Za-z0-9_-]+|(?P<abi3>abi3))\.so$")
_ORIGIN = re.compile(r"^\$(?:ORIGIN|\{ORIGIN\})(?=/|$)")


def dist_label(wheel: WheelFacts | WheelSummary) -> str:
    """``torch 2.9.0`` — how explanations name a distribution."""
    return f"{wheel.metadata.name} {wheel.metadata.version}"


@dataclass(frozen=True, eq=False)
class InstalledObject:
    """One ELF object at its site-packages path, with the wheel installing it (compared by identity)."""

    path: str
    facts: ElfFacts
    wheel: WheelFacts

    @property
    def dist(self) -> str:
        return dist_label(self.wheel)

    @property
    def directory(self) -> str:
        return posixpath.dirname(self.path)

    @property
    def filename(self) -> str:
        return posixpath.basename(self.path)

    @cached_property
    def extension_python(self) -> tuple[int, int] | str | None:
        """(3, 12) for ``cpython-312`` modules, ``"abi3"``, ``"any"`` when untagged, None for libraries."""
        m = _EXT_SUFFIX.search(self.filename)
        if m:
            if m.group("abi3"):
                return "abi3"
            return int(m.group("ver")), int(m.group("minor"))
        stem = self.filename.split(".", 1)[0]
        if self.filename.endswith(".so") and any(e.name == f"PyInit_{stem}" for e in self.facts.exports):
            return "any"
        return None

    @property
    def is_extension(self) -> bool:
        """A Python extension module (CPython imports it with RTLD_LOCAL), not a plain library."""
        return self.extension_python is not None


class Layout:
    """The set's ELF objects at their installed paths, and the wheels they come from."""

    def __init__(self, wheels: Sequence[WheelFacts]) -> None:
        self.wheels = tuple(wheels)
        self.objects: dict[str, InstalledObject] = {}
        for wheel in self.wheels:
            for elf in wheel.elf:
                path = installed_path(elf.path)
                self.objects.setdefault(path, InstalledObject(path, elf, wheel))

    def with_wheel(self, wheel: WheelFacts) -> Layout:
        """This layout plus one wheel, sharing the InstalledObjects already here (identity matters)."""
        new = Layout(())
        new.wheels = (*self.wheels, wheel)
        new.objects = dict(self.objects)
        for elf in wheel.elf:
            path = installed_path(elf.path)
            new.objects.setdefault(path, InstalledObject(path, elf, wheel))
        return new

    def find(self, directory: str, soname: str) -> InstalledObject | None:
        """The object ld.so would open as ``directory/soname``; None when the set has no such file."""
        return self.objects.get(site_relative(posixpath.join(directory, soname)))

    def search_dirs(self, obj: InstalledObject, entries: Sequence[str]) -> list[str]:
        """RPATH/RUNPATH entries as site-packages relative directories, ``$ORIGIN`` resolved; those inside
        the environment's prefix are kept (``$ORIGIN/../../..`` of ``pkg/_C.so`` is ``<prefix>/lib``, where
        a wheel's ``.data/data/lib`` files land), those outside it dropped."""
        dirs: list[str] = []
        for raw in entries:
            for entry in raw.split(":"):
                if not _ORIGIN.match(entry):
                    continue
                joined = site_relative(posixpath.join(obj.directory, _ORIGIN.sub("", entry).lstrip("/")))
                if not in_prefix(joined):
                    continue
                dirs.append("" if joined == "." else joined)
        return dirs

    def extensions(self) -> list[InstalledObject]:
        return [o for o in self.objects.values() if o.is_extension]

    def wheel_of(self, name: str) -> WheelFacts | None:
        """The set's wheel for a distribution name (normalised comparison)."""
        from packaging.utils import canonicalize_name

        key = canonicalize_name(name)
        for w in self.wheels:
            if canonicalize_name(w.metadata.name) == key:
                return w
        return None
