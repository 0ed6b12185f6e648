"""What to solve together: stack members, their roles, alternatives, companions and version bounds.

The built-in stack is torch + the sglang kernel (``sglang-kernel`` or its old name ``sgl-kernel``:
one import package, so exactly one of them) + flashinfer with its version-locked companions.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from abiprobe.errors import UsageError

BASE_ROLE = "torch"


@dataclass(frozen=True)
class Companion:
    """A wheel whose version must equal its core's; ``required`` companions must be found on an index."""

    name: NormalizedName
    required: bool = False


@dataclass(frozen=True)
class StackMember:
    """One role of the stack: alternatives (preferred first, never two at once) and a version bound."""

    role: str
    names: tuple[NormalizedName, ...]
    specifier: SpecifierSet = field(default_factory=SpecifierSet)
    companions: tuple[Companion, ...] = ()

    @property
    def primary(self) -> NormalizedName:
        return self.names[0]

    def all_names(self) -> tuple[NormalizedName, ...]:
        return self.names + tuple(c.name for c in self.companions)

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "names": list(self.names),
            "specifier": str(self.specifier),
            "companions": [{"name": c.name, "required": c.required} for c in self.companions],
        }


@dataclass(frozen=True)
class Stack:
    """The members solved together; the first member (torch) is the base every other one loads into."""

    members: tuple[StackMember, ...]

    def __post_init__(self) -> None:
        seen: dict[str, str] = {}
        for m in self.members:
            for name in m.all_names():
                if name in seen and seen[name] != m.role:
                    raise UsageError(f"{name} appears in two stack roles: {seen[name]} and {m.role}")
                seen[name] = m.role

    @property
    def base(self) -> StackMember:
        return self.members[0]

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(m.role for m in self.members)

    def member(self, role: str) -> StackMember:
        for m in self.members:
            if m.role == role:
                return m
        raise UsageError(f"no stack role {role!r} (roles: {', '.join(self.roles)})")

    def role_of(self, name: str) -> str | None:
        """The role a distribution name belongs to (as a member or companion), or None."""
        wanted = canonicalize_name(name)
        for m in self.members:
            if wanted in m.all_names():
                return m.role
        return None

    def project_names(self) -> tuple[NormalizedName, ...]:
        return tuple(n for m in self.members for n in m.all_names())

    def with_constraint(self, requirement: str) -> Stack:
        """Narrow the member that owns the requirement's name (``torch>=2.9``)."""
        req = _parse_requirement(requirement)
        role = self.role_of(req.name)
        if role is None:
            raise UsageError(f"--constraint {requirement!r}: {req.name} is not in the stack (use --with)")
        member = self.member(role)
        if canonicalize_name(req.name) not in member.names:
            raise UsageError(f"--constraint {requirement!r}: constrain the core of {role}, not a companion")
        merged = SpecifierSet(f"{member.specifier},{req.specifier}".strip(","))
        return self._replace_member(replace(member, specifier=merged))

    def with_package(self, requirement: str, role: str | None = None) -> Stack:
        """Add a package as a new role (or narrow it when already present)."""
        req = _parse_requirement(requirement)
        if self.role_of(req.name) is not None:
            return self.with_constraint(requirement)
        name = canonicalize_name(req.name)
        member = StackMember(role=role or name, names=(name,), specifier=req.specifier)
        return Stack((*self.members, member))

    def _replace_member(self, new: StackMember) -> Stack:
        return Stack(tuple(new if m.role == new.role else m for m in self.members))

    def to_json(self) -> list[dict[str, Any]]:
        return [m.to_json() for m in self.members]


def _parse_requirement(text: str) -> Requirement:
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise UsageError(f"not a requirement: {text!r} ({exc})") from None
    if req.url or req.extras or req.marker:
        raise UsageError(f"{text!r}: only a name and version bounds are allowed here")
    return req


def _names(values: Iterable[str]) -> tuple[NormalizedName, ...]:
    return tuple(canonicalize_name(v) for v in values)


def default_stack() -> Stack:
    """torch; the kernel under its new and old names; flashinfer with cubin and jit-cache companions."""
    return Stack(
        (
            StackMember(role="torch", names=_names(["torch"])),
            StackMember(role="kernel", names=_names(["sglang-kernel", "sgl-kernel"])),
            StackMember(
                role="flashinfer",
                names=_names(["flashinfer-python"]),
                companions=(
                    Companion(canonicalize_name("flashinfer-cubin")),
                    Companion(canonicalize_name("flashinfer-jit-cache")),
                ),
            ),
        )
    )


def stack_from_mapping(data: Mapping[str, Any], base: Stack | None = None) -> Stack:
    """Build a stack from parsed TOML: ``[stack] members = [...]`` replaces, ``with``/``constraints`` add."""
    section = data.get("stack", data)
    if not isinstance(section, Mapping):
        raise UsageError("stack file: [stack] must be a table")
    stack = base if base is not None else default_stack()
    members = section.get("members")
    if members is not None:
        stack = Stack(tuple(_member_from_mapping(m) for m in _list_of(members, "members", Mapping)))
    for req in _list_of(section.get("with", []), "with", str):
        stack = stack.with_package(req)
    for req in _list_of(section.get("constraints", []), "constraints", str):
        stack = stack.with_constraint(req)
    if not stack.members:
        raise UsageError("stack file: no members")
    return stack


def _list_of(value: Any, key: str, kind: type) -> Sequence[Any]:
    if not isinstance(value, list) or not all(isinstance(v, kind) for v in value):
        raise UsageError(f"stack file: {key} must be a list of {'tables' if kind is Mapping else 'strings'}")
    return value


def _member_from_mapping(m: Mapping[str, Any]) -> StackMember:
    role, names = m.get("role"), m.get("names")
    if not isinstance(role, str) or not isinstance(names, list) or not names:
        raise UsageError('stack file: each member needs role = "..." and names = ["..."]')
    companions = tuple(
        Companion(canonicalize_name(str(c["name"])), bool(c.get("required", False)))
        if isinstance(c, Mapping)
        else Companion(canonicalize_name(str(c)))
        for c in m.get("companions", [])
    )
    try:
        spec = SpecifierSet(str(m.get("specifier", "")))
    except ValueError as exc:
        raise UsageError(f"stack file: role {role}: bad specifier ({exc})") from None
    return StackMember(role=role, names=_names(str(n) for n in names), specifier=spec, companions=companions)


def load_stack_file(path: Path, base: Stack | None = None) -> Stack:
    """Read a TOML stack file (Python 3.11+ reads TOML natively)."""
    if sys.version_info < (3, 11):
        raise UsageError("--stack needs Python 3.11 or newer (tomllib)")
    tomllib = importlib.import_module("tomllib")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read stack file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"stack file {path} is not valid TOML: {exc}") from None
    return stack_from_mapping(data, base)
