"""The installer's constraints and overrides as rules on projects' versions, for the target.

A constraint (pip's ``-c`` files, uv's ``constraint-dependencies``) bounds a project's versions wherever it
is installed; an override (uv's ``override-dependencies``) bounds them too and replaces every requirement
on that project in the install closure. A rule whose marker does not hold on the target does not apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from abiprobe.errors import UsageError
from abiprobe.model.requirements import marker_environment
from abiprobe.model.target import Target


@dataclass(frozen=True)
class InstallRule:
    """One constraint or override: ``name``'s versions must satisfy ``specifier``."""

    name: NormalizedName
    specifier: SpecifierSet
    text: str
    origin: str

    def admits(self, version: Version) -> bool:
        return self.specifier.contains(version, prereleases=True)

    def describe(self) -> str:
        return f"{self.text} ({self.origin})"


def install_rules(entries: Iterable[tuple[str, str]], target: Target) -> tuple[InstallRule, ...]:
    """(requirement text, origin) pairs as the rules that apply on ``target``; a bad one is a usage error."""
    env = marker_environment(target)
    rules = []
    for text, origin in entries:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise UsageError(f"{origin}: {text!r} is not a requirement: {exc}") from None
        if req.url:
            raise UsageError(f"{origin}: {text!r}: a constraint naming a URL is not read by abiprobe")
        if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
            continue
        rules.append(InstallRule(canonicalize_name(req.name), req.specifier, text, origin))
    return tuple(rules)
