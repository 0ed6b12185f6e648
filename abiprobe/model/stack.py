"""What to solve together: stack members, their roles, alternatives, companions and version bounds.

The one stack definition: solve, ``check`` (companion versions) and the installed-environment scope all
read it. The built-in stack is torch + the sglang kernel (``sglang-kernel`` or its old name
``sgl-kernel``: one import package, so exactly one of them) + flashinfer with its version-locked
companions, one of which (``flashinfer-jit-cache``) is a shim over per-architecture provider wheels.
Per-package facts are fields of :class:`StackMember` / :class:`Companion`, so a stack file can set them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from abiprobe.errors import UsageError
from abiprobe.installers.toml import toml_loads

_PROVIDER_TAG = re.compile(r"sm\d{2,3}[af]?")

BASE_ROLE = "torch"
# How a companion's version must equal its core's: ``public`` ignores local labels (``0.7.0+cu130``
# matches ``0.7.0``), ``exact`` compares whole versions.
VersionMatch = Literal["public", "exact"]
VERSION_MATCHES: tuple[VersionMatch, ...] = ("public", "exact")


@dataclass(frozen=True)
class Companion:
    """A wheel whose version must equal its core's; ``required`` companions must be found on an index.

    ``arch_wheels``: the per-architecture wheels this companion (a shim) pins to its own version, of which
    the target loads the one its package's own selection order picks (see :mod:`abiprobe.solve.arch_wheels`).
    """

    name: NormalizedName
    required: bool = False
    match: VersionMatch = "public"
    arch_wheels: ArchWheels | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "required": self.required, "match": self.match}
        if self.arch_wheels is not None:
            out["providers"] = self.arch_wheels.to_json()
        return out


@dataclass(frozen=True)
class ArchWheels:
    """Per-architecture provider wheels named ``<prefix><tag>`` (``flashinfer-jit-cache-sm120f``).

    ``tags`` are the providers known to exist; those a shim's Requires-Dist names are added at solve time.
    ``error`` is the package's own wording of a version mismatch, with ``{name}``, ``{version}`` and
    ``{core_version}`` fields.
    """

    prefix: str
    tags: tuple[str, ...] = ()
    error: str = "{name} version ({version}) does not match the core version ({core_version})"

    def name(self, tag: str) -> NormalizedName:
        return canonicalize_name(f"{self.prefix}{tag}")

    def tag_of(self, name: str) -> str | None:
        """The architecture tag of a provider's distribution name, or None when it is not one."""
        wanted = canonicalize_name(name)
        prefix = canonicalize_name(self.prefix.rstrip("-_.")) + "-"
        if not wanted.startswith(prefix):
            return None
        tag = wanted[len(prefix) :]
        return tag if _PROVIDER_TAG.fullmatch(tag) else None

    def to_json(self) -> dict[str, Any]:
        return {"prefix": self.prefix, "tags": list(self.tags)}


@dataclass(frozen=True)
class PackageLoading:
    """How a package loads its shared objects where its own code cannot be read for it (data, not code).

    ``preload``: installed-path globs of libraries its import loads globally (RTLD_GLOBAL) before anything
    else, in this order; ``preload_closure``: roots whose DT_NEEDED closure inside ``closure_dir`` is also
    loaded globally (the rest of that directory stays on disk). ``by_arch``: directories of modules the
    package picks by GPU, each with the compute capabilities it is loaded on (empty: every other GPU).
    ``read_source``: whether its Python code is read for what it loads (False: every extension module is
    loaded at import, in path order)."""

    package: str
    preload: tuple[str, ...] = ()
    preload_closure: tuple[str, ...] = ()
    closure_dir: str = ""
    by_arch: tuple[tuple[str, tuple[str, ...]], ...] = ()
    read_source: bool = True

    def selects(self, path: str, cc: tuple[int, int] | None) -> bool | None:
        """Whether the package loads the module at ``path`` on a GPU of compute capability ``cc``; None
        when no ``by_arch`` directory holds it."""
        directory = path.rsplit("/", 1)[0]
        dirs = [d for d, _ in self.by_arch]
        if directory not in dirs:
            return None
        chosen = next((d for d, ccs in self.by_arch if cc is not None and f"{cc[0]}.{cc[1]}" in ccs), None)
        if chosen is None:
            chosen = next((d for d, ccs in self.by_arch if not ccs), None)
        return directory == chosen

    def to_json(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "preload": list(self.preload),
            "preload_closure": list(self.preload_closure),
            "closure_dir": self.closure_dir,
            "by_arch": [{"dir": d, "ccs": list(ccs)} for d, ccs in self.by_arch],
            "read_source": self.read_source,
        }


def loading_digest(rules: Sequence[PackageLoading]) -> str:
    """A digest of loading data, for keys of results that depend on it."""
    import hashlib
    import json

    text = json.dumps([r.to_json() for r in rules], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# The CUDA libraries torch's __init__ preloads from the nvidia wheels (its cuda_libs table, by file stem).
TORCH_PRELOADS = ("libcublas", "libcudnn", "libnvrtc", "libcudart", "libcupti", "libcufft", "libcurand",
                  "libnvJitLink", "libcusparse", "libcusparseLt", "libcusolver", "libnccl", "libnvToolsExt",
                  "libnvshmem_host", "libcufile")  # fmt: skip
TORCH_LOADING = PackageLoading(
    "torch",
    preload=tuple(f"nvidia/*/lib/{stem}.so.*" for stem in TORCH_PRELOADS),
    preload_closure=("torch/_C.*so", "torch/_C.so", "torch/lib/libtorch_global_deps.so"),
    closure_dir="torch/lib",
    read_source=False,
)
# sgl_kernel's __init__ imports sm90/common_ops on Hopper (9.0) and sm100/common_ops elsewhere.
SGL_KERNEL_LOADING = PackageLoading(
    "sgl_kernel", by_arch=(("sgl_kernel/sm90", ("9.0",)), ("sgl_kernel/sm100", ()))
)


@dataclass(frozen=True)
class StackMember:
    """One role of the stack: alternatives (preferred first, never two at once) and a version bound."""

    role: str
    names: tuple[NormalizedName, ...]
    specifier: SpecifierSet = field(default_factory=SpecifierSet)
    companions: tuple[Companion, ...] = ()
    loading: tuple[PackageLoading, ...] = ()  # how its packages load their shared objects (data)

    @property
    def primary(self) -> NormalizedName:
        return self.names[0]

    def all_names(self) -> tuple[NormalizedName, ...]:
        """Cores and companions, and the providers known by tag (others are matched by prefix)."""
        arch_wheels = tuple(
            c.arch_wheels.name(t)
            for c in self.companions
            if c.arch_wheels is not None
            for t in c.arch_wheels.tags
        )
        return self.names + tuple(c.name for c in self.companions) + arch_wheels

    def owns(self, name: str) -> bool:
        """Whether a distribution belongs to this role: a core, a companion, or any provider by prefix."""
        wanted = canonicalize_name(name)
        return wanted in self.all_names() or self.arch_wheel_of(wanted) is not None

    def arch_wheel_of(self, name: str) -> tuple[Companion, str] | None:
        """The shim companion whose provider ``name`` is, and the provider's architecture tag."""
        for c in self.companions:
            if c.arch_wheels is not None and (tag := c.arch_wheels.tag_of(name)) is not None:
                return c, tag
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "names": list(self.names),
            "specifier": str(self.specifier),
            "companions": [c.to_json() for c in self.companions],
        }


@dataclass(frozen=True)
class Stack:
    """The members solved together; the first member (torch) is the base every other one loads into."""

    members: tuple[StackMember, ...]
    roles: tuple[str, ...] = field(init=False, repr=False, compare=False)  # the members' roles, in order

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", tuple(m.role for m in self.members))
        seen: dict[str, str] = {}
        for m in self.members:
            for name in m.all_names():
                if name in seen and seen[name] != m.role:
                    raise UsageError(f"{name} appears in two stack roles: {seen[name]} and {m.role}")
                seen[name] = m.role

    @property
    def base(self) -> StackMember:
        return self.members[0]

    def member(self, role: str) -> StackMember:
        for m in self.members:
            if m.role == role:
                return m
        raise UsageError(f"no stack role {role!r} (roles: {', '.join(self.roles)})")

    def role_of(self, name: str) -> str | None:
        """The role a distribution name belongs to (as a member, companion or provider), or None."""
        for m in self.members:
            if m.owns(name):
                return m.role
        return None

    def loading(self) -> tuple[PackageLoading, ...]:
        """Every member's package loading data, in member order (the order a program imports them)."""
        return tuple(rule for m in self.members for rule in m.loading)

    def project_names(self) -> tuple[NormalizedName, ...]:
        return tuple(n for m in self.members for n in m.all_names())

    def version_rules(self, name: str) -> CompanionRule | None:
        """How ``name``'s version is coupled to another distribution's, when it is a companion or provider."""
        wanted = canonicalize_name(name)
        for m in self.members:
            for c in m.companions:
                if c.name == wanted:
                    return CompanionRule(wanted, m.primary, c.match)
            found = m.arch_wheel_of(wanted)
            if found is not None:
                shim = found[0]
                assert shim.arch_wheels is not None
                return CompanionRule(wanted, m.primary, "public", shim.name, shim.arch_wheels.error)
        return None

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

    def digest(self) -> str:
        """A digest of everything the analysis reads of the stack (members, companions, providers and
        loading data), for keys of results that depend on it."""
        import hashlib
        import json

        text = json.dumps(
            {"members": self.to_json(), "loading": [r.to_json() for r in self.loading()]}, sort_keys=True
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def unread_sources(self) -> frozenset[str]:
        """The import packages whose Python sources a wheel read leaves out (``read_source`` off in their
        loading data: torch's thousands of modules, whose loading the data says instead)."""
        return frozenset(r.package for r in self.loading() if not r.read_source)


@dataclass(frozen=True)
class CompanionRule:
    """A version coupling: ``name`` must equal ``core`` (by ``match``), and a provider also its ``shim``
    exactly (the shim pins every provider to its own version)."""

    name: NormalizedName
    core: NormalizedName
    match: VersionMatch
    shim: NormalizedName | None = None
    error: str | None = None


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


# flashinfer's version checks at import (flashinfer-ai/flashinfer flashinfer/jit/env.py): flashinfer-cubin's
# version must equal flashinfer's; flashinfer-jit-cache's and every provider's public version must equal
# flashinfer's (its _check_jit_cache_version), in this wording.
FLASHINFER_VERSION_ERROR = (
    "{name} version ({version}) does not match flashinfer version ({core_version}). "
    "Please install the same version of both packages."
)
# The cu130 providers flashinfer publishes (its wheel index's cu130 page); provider distributions are
# named flashinfer-jit-cache-<tag> (flashinfer-jit-cache-provider/package_config.py).
FLASHINFER_PROVIDER_TAGS = ("sm80", "sm89", "sm90a", "sm100a", "sm103a", "sm110a", "sm120f", "sm121a")


def default_stack() -> Stack:
    """torch; the kernel under its new and old names; flashinfer with cubin and jit-cache companions."""
    return Stack(
        (
            StackMember(role="torch", names=_names(["torch"]), loading=(TORCH_LOADING,)),
            StackMember(
                role="kernel", names=_names(["sglang-kernel", "sgl-kernel"]), loading=(SGL_KERNEL_LOADING,)
            ),
            StackMember(
                role="flashinfer",
                names=_names(["flashinfer-python"]),
                companions=(
                    Companion(canonicalize_name("flashinfer-cubin"), match="exact"),
                    Companion(
                        canonicalize_name("flashinfer-jit-cache"),
                        arch_wheels=ArchWheels(
                            "flashinfer-jit-cache-", FLASHINFER_PROVIDER_TAGS, FLASHINFER_VERSION_ERROR
                        ),
                    ),
                ),
            ),
        )
    )


def version_error(rule: CompanionRule, version: str, core_version: str) -> str:
    """The coupled package's own wording of a version mismatch (flashinfer's for flashinfer's stack)."""
    template = rule.error or FLASHINFER_VERSION_ERROR
    return template.format(name=rule.name, version=version, core_version=core_version)


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
    companions = tuple(_companion_from(c, role) for c in m.get("companions", []))
    try:
        spec = SpecifierSet(str(m.get("specifier", "")))
    except ValueError as exc:
        raise UsageError(f"stack file: role {role}: bad specifier ({exc})") from None
    if "loading" in m:
        loading = tuple(_loading_from(x, role) for x in _list_of(m["loading"], "loading", Mapping))
    else:  # a member the built-in stack knows (torch) keeps the built-in loading data
        wanted = set(_names(str(n) for n in names))
        loading = next((b.loading for b in default_stack().members if wanted & set(b.names)), ())
    return StackMember(
        role=role, names=_names(str(n) for n in names), specifier=spec, companions=companions, loading=loading
    )


def _loading_from(x: Mapping[str, Any], role: str) -> PackageLoading:
    """``{package, preload, preload_closure, closure_dir, by_arch = [{dir, ccs}], read_source}``: how a
    member's import package loads its shared objects, as the built-in stack's data says for torch."""
    package = x.get("package")
    if not isinstance(package, str) or not package.isidentifier():
        raise UsageError(f'stack file: role {role}: each loading table needs package = "<import name>"')
    by_arch = []
    for entry in _list_of(x.get("by_arch", []), "loading.by_arch", Mapping):
        if not isinstance(entry.get("dir"), str):
            raise UsageError(f'stack file: role {role}: by_arch entries need dir = "..." (and ccs = ["9.0"])')
        ccs = tuple(str(c) for c in _list_of(entry.get("ccs", []), "loading.by_arch.ccs", str))
        by_arch.append((entry["dir"], ccs))
    closure_dir = x.get("closure_dir", "")
    read_source = x.get("read_source", True)
    if not isinstance(closure_dir, str) or not isinstance(read_source, bool):
        raise UsageError(
            f"stack file: role {role}: closure_dir must be a string and read_source true or false"
        )
    return PackageLoading(
        package,
        preload=tuple(_list_of(x.get("preload", []), "loading.preload", str)),
        preload_closure=tuple(_list_of(x.get("preload_closure", []), "loading.preload_closure", str)),
        closure_dir=closure_dir,
        by_arch=tuple(by_arch),
        read_source=read_source,
    )


def _companion_from(c: Any, role: str) -> Companion:
    """``"name"`` or ``{name, required, match, providers = {prefix, tags}}``."""
    if not isinstance(c, Mapping):
        return Companion(canonicalize_name(str(c)))
    match = c.get("match", "public")
    if match not in VERSION_MATCHES:
        choices = ", ".join(VERSION_MATCHES)
        raise UsageError(f"stack file: role {role}: companion match must be one of {choices}")
    arch_wheels = None
    raw = c.get("providers")
    if raw is not None:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("prefix"), str):
            raise UsageError(f'stack file: role {role}: providers needs prefix = "..." (and tags = [...])')
        tags = tuple(str(t).lower() for t in _list_of(raw.get("tags", []), "providers.tags", str))
        bad = [t for t in tags if not _PROVIDER_TAG.fullmatch(t)]
        if bad:
            raise UsageError(f"stack file: role {role}: provider tags look like sm90a, not {bad[0]!r}")
        arch_wheels = ArchWheels(raw["prefix"], tags, str(raw.get("error", ArchWheels.error)))
    return Companion(canonicalize_name(str(c["name"])), bool(c.get("required", False)), match, arch_wheels)


def load_stack_file(path: Path, base: Stack | None = None) -> Stack:
    """Read a TOML stack file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read stack file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"stack file {path} is not valid TOML: {exc}") from None
    try:
        data = toml_loads(text)
    except UsageError as exc:
        raise UsageError(f"stack file {path}: {exc}") from None
    return stack_from_mapping(data, base)
