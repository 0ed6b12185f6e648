"""What an item argument names, decided once: :func:`parse_item` turns the text into a typed spec, and
each command declares the kinds it takes (an :class:`Accepts`), refusing any other in one line.

The kinds (``KIND_WORDS``): a local wheel file, a directory (an unpacked wheel or a tree of binaries), a
wheel URL, ``PROJECT==VERSION``, a bare project name, any other requirement (a range, extras,
``NAME @ URL``), a requirements file (``.txt``), a ``pylock.toml``, and any other local file (an ELF
object to ``inspect``; a Python interpreter to ``diff`` and ``--torch``). A text that is none of these
is a :class:`NotAnItem`, which no command takes. Reading a spec's facts is
:func:`abiprobe.commands.items.facts_of`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from packaging.requirements import InvalidRequirement, Requirement

from abiprobe.errors import UsageError
from abiprobe.model.user_requirements import is_pinned

ItemKind = Literal[
    "wheel",
    "directory",
    "url",
    "pinned",
    "name",
    "requirement",
    "requirements",
    "pylock",
    "file",
    "installed",
]
NotAnItemKind = Literal["missing", "invalid", "special"]

# How a refusal line names each kind ("lib.so: a local file other than a wheel; check takes ...").
KIND_WORDS: dict[str, str] = {
    "wheel": "a .whl file",
    "directory": "a directory",
    "url": "a wheel URL",
    "pinned": "PROJECT==VERSION",
    "name": "a project name",
    "requirement": "a requirement",
    "requirements": "a requirements file (.txt)",
    "pylock": "a pylock.toml",
    "file": "a local file other than a wheel",
    "installed": "an installed distribution",
}

_PYLOCK = re.compile(r"^pylock(\.[^.]+)?\.toml$")
# A text ending so (or holding a slash) that names nothing is a missing path, never a project name.
_PATH_SUFFIXES = (".whl", ".so", ".cubin", ".txt", ".toml")


@dataclass(frozen=True)
class _OnDisk:
    """A spec of something on disk: the text as given and its path."""

    text: str
    path: Path


@dataclass(frozen=True)
class _Requirement:
    """A spec written as a requirement: the text as given and the requirement it parses to."""

    text: str
    requirement: Requirement


class WheelFileSpec(_OnDisk):
    kind: ClassVar[ItemKind] = "wheel"


class DirectorySpec(_OnDisk):
    """An unpacked wheel or a tree of binaries."""

    kind: ClassVar[ItemKind] = "directory"


class RequirementsFileSpec(_OnDisk):
    kind: ClassVar[ItemKind] = "requirements"


class LockFileSpec(_OnDisk):
    kind: ClassVar[ItemKind] = "pylock"


class LocalFileSpec(_OnDisk):
    """A local file that is no wheel, requirements file or lock: an ELF object, or a Python interpreter."""

    kind: ClassVar[ItemKind] = "file"


@dataclass(frozen=True)
class WheelUrlSpec:
    text: str  # the URL
    kind: ClassVar[ItemKind] = "url"


class PinnedSpec(_Requirement):
    """``PROJECT==VERSION`` (one ``==`` or ``===`` clause, no wildcard, no URL): one wheel of an index."""

    kind: ClassVar[ItemKind] = "pinned"


class NameSpec(_Requirement):
    """A bare project name: the newest version to ``check`` and ``probe``; to ``inspect``, the installed."""

    kind: ClassVar[ItemKind] = "name"


class RequirementSpec(_Requirement):
    """Any other requirement (a range, extras, markers, ``NAME @ URL``): resolved for the target."""

    kind: ClassVar[ItemKind] = "requirement"


@dataclass(frozen=True)
class InstalledSpec:
    """The distribution ``project`` installed for ``interpreter`` (None: this one). Never parsed: a
    command makes it of a name (``inspect NAME``) or of an interpreter (``diff /path/to/python``)."""

    text: str
    project: str
    interpreter: str | None
    kind: ClassVar[ItemKind] = "installed"


@dataclass(frozen=True)
class NotAnItem:
    """A text that names nothing an item can be: a missing path, not a requirement, or a special file."""

    text: str
    why: str
    problem: NotAnItemKind


WheelSpec = WheelFileSpec | DirectorySpec | WheelUrlSpec | PinnedSpec | InstalledSpec
ItemSpec = (
    WheelFileSpec
    | DirectorySpec
    | WheelUrlSpec
    | PinnedSpec
    | NameSpec
    | RequirementSpec
    | RequirementsFileSpec
    | LockFileSpec
    | LocalFileSpec
    | InstalledSpec
)


def is_pylock(path: Path) -> bool:
    """A PEP 751 lock by its name (``pylock.toml``, ``pylock.NAME.toml``)."""
    return bool(_PYLOCK.match(path.name))


def _looks_like_path(text: str) -> bool:
    return "/" in text or text.endswith(_PATH_SUFFIXES)


def _local(text: str, path: Path) -> ItemSpec:
    if path.suffix == ".whl":
        return WheelFileSpec(text, path)
    if is_pylock(path):
        return LockFileSpec(text, path)
    if path.suffix == ".txt":
        return RequirementsFileSpec(text, path)
    return LocalFileSpec(text, path)


def _requirement(text: str, req: Requirement) -> ItemSpec:
    if req.url is None and is_pinned(req):
        return PinnedSpec(text, req)
    if req.url is None and not req.specifier and not req.extras and req.marker is None:
        return NameSpec(text, req)
    return RequirementSpec(text, req)


def parse_item(text: str) -> ItemSpec | NotAnItem:
    """What ``text`` names: a URL by its scheme, an existing path by what it is, else a requirement."""
    if text.startswith(("http://", "https://")):
        return WheelUrlSpec(text)
    path = Path(text)
    if path.is_dir():
        return DirectorySpec(text, path)
    if path.is_file():
        return _local(text, path)
    if path.exists():
        return NotAnItem(text, "neither a file nor a directory", "special")
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        if _looks_like_path(text):
            return NotAnItem(text, "no such file or directory", "missing")
        return NotAnItem(text, str(exc).splitlines()[0], "invalid")
    if req.url is None and _looks_like_path(text):
        return NotAnItem(text, "no such file or directory", "missing")
    return _requirement(text, req)


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


@dataclass(frozen=True)
class Accepts:
    """The kinds one command takes, in the order its refusal lists them; ``words`` names a kind as this
    command reads it (``inspect``'s local file is a .so or .cubin file)."""

    takes: str  # "check takes", "a torch release is": the refusal line's verb phrase
    kinds: tuple[ItemKind, ...]
    words: Mapping[str, str] = field(default_factory=dict)

    def word(self, kind: str) -> str:
        return self.words.get(kind) or KIND_WORDS[kind]

    def refusal(self, spec: ItemSpec | NotAnItem) -> str:
        """The one line refusing ``spec``."""
        wanted = _listed([self.word(k) for k in self.kinds])
        if isinstance(spec, NotAnItem):
            if spec.problem == "special":
                return f"{spec.text}: {spec.why}"
            return f"{spec.text}: not {wanted} ({spec.why})"
        return f"{spec.text}: {KIND_WORDS[spec.kind]}; {self.takes} {wanted}"

    def spec(self, text: str) -> ItemSpec:
        """``text`` parsed, when it is a kind this command takes; else a usage error of one line."""
        found = parse_item(text)
        if isinstance(found, NotAnItem) or found.kind not in self.kinds:
            raise UsageError(self.refusal(found))
        return found
