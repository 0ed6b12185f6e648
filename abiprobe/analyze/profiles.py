"""System libraries a target host provides (glibc, libstdc++, libgcc_s, optional ones, the CUDA driver).

Profile file format (JSON, ``abiprobe-profile/1``)::

    {"format": "abiprobe-profile/1", "name": "my-host", "machine": "x86_64", "glibc": "2.28",
     "driver": true,                       # libcuda.so.1 is present (GPU host)
     "libraries": {"libc.so.6": {"versions": ["GLIBC_2.2.5", ...],
                                 "exports": {"malloc": ["GLIBC_2.2.5"], ...}},   # optional
                   "libnuma.so.1": {"versions": []}}}

or a derived one: ``{"format": "abiprobe-profile/1", "base": "manylinux_2_28_x86_64", "name": "x",
"add": {"libnuma.so.1": {"versions": ["libnuma_1.1"]}}, "remove": ["librt.so.1"]}``.
``exports`` maps a symbol name to the versions it is defined under (``""`` for unversioned), or names a
shared table shipped with abiprobe (``"exports_x86_64.json"`` or ``"exports_x86_64.json#<soname>"``), cut
to the library's ``versions``; without it
the library satisfies versioned references to its versions only, plus any reference when it has no
version definitions at all (an opaque library).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abiprobe.errors import AbiprobeError, UsageError

if TYPE_CHECKING:
    from abiprobe.binary.bounded import BinaryInput

PROFILE_FORMAT = "abiprobe-profile/1"
DRIVER_SONAME = "libcuda.so.1"
BUILTIN_PROFILES = (
    "manylinux_2_28_x86_64",
    "manylinux_2_34_x86_64",
    "manylinux_2_28_aarch64",
    "manylinux_2_34_aarch64",
)


class ProfileError(AbiprobeError):
    """A profile file is missing or malformed."""


@dataclass(frozen=True)
class SystemLibrary:
    """One library of the target host: its version definitions and, when known, its exports."""

    soname: str
    versions: frozenset[str] = frozenset()
    exports: Mapping[str, frozenset[str]] | None = field(default=None, hash=False, compare=False)
    origin: str = field(default="", compare=False)  # the file it was read from (host libraries)

    @property
    def opaque(self) -> bool:
        """True when nothing is known about its symbols: it may satisfy any reference."""
        return self.exports is None and not self.versions

    def provides(self, name: str, version: str | None) -> bool | None:
        """Whether it defines ``name`` (at ``version``); None when the profile cannot tell."""
        if self.exports is not None:
            defined = self.exports.get(name)
            if defined is None:
                return False
            return version is None or version in defined
        if version is not None:
            return version in self.versions
        return None if self.opaque else False


@dataclass(frozen=True)
class Profile:
    """The system libraries of a target host, by soname; ``driver`` says whether libcuda.so.1 exists."""

    name: str
    machine: str
    glibc: tuple[int, int] | None
    libraries: tuple[SystemLibrary, ...]
    driver: bool = True
    description: str = ""
    # soname -> why the target does not provide it although a file of that name is there (host profiles)
    notes: tuple[tuple[str, str], ...] = ()
    this_host: bool = False  # read from the machine abiprobe runs on (not a target's stand-in)
    # this host's: whether the Python that runs the set is known (its own libraries are among ``libraries``)
    knows_interpreter: bool = True
    # this host's, as the target of a check naming no platform: the built-in profile its platform tag
    # stands for, to say which libraries the host has beyond what that platform promises
    stand_in: Profile | None = field(default=None, compare=False, repr=False)
    # this host's: a library not among ``libraries`` looked up by its loader when asked for (a library
    # the package's Python loads by name); what it finds is not part of the digest (never stored)
    lookup: Callable[[str], SystemLibrary | None] | None = field(default=None, compare=False, repr=False)

    def library(self, soname: str) -> SystemLibrary | None:
        for lib in self.libraries:
            if lib.soname == soname:
                return lib
        if self.lookup is not None and soname and "/" not in soname:
            return self.lookup(soname)
        return None

    def beyond_stand_in(self, soname: str) -> bool:
        """Whether this host has ``soname`` as a system library while the platform it stands for does not
        promise it (a target of that platform without it fails where this host loads)."""
        return self.stand_in is not None and self.stand_in.library(soname) is None

    def note(self, soname: str) -> str | None:
        return next((text for name, text in self.notes if name == soname), None)

    def has(self, soname: str) -> bool:
        return self.library(soname) is not None or (self.driver and soname == DRIVER_SONAME)

    @cached_property
    def _digest(self) -> str:
        return hashlib.sha256(json.dumps(self.to_json(), sort_keys=True).encode()).hexdigest()[:16]

    def digest(self) -> str:
        """A short content hash, for cache keys (computed once)."""
        return self._digest

    def to_json(self) -> dict[str, Any]:
        libs: dict[str, Any] = {}
        for lib in self.libraries:
            entry: dict[str, Any] = {"versions": sorted(lib.versions)}
            if lib.exports is not None:
                entry["exports"] = {k: sorted(v) for k, v in sorted(lib.exports.items())}
            libs[lib.soname] = entry
        doc: dict[str, Any] = {
            "format": PROFILE_FORMAT,
            "name": self.name,
            "machine": self.machine,
            "glibc": None if self.glibc is None else f"{self.glibc[0]}.{self.glibc[1]}",
            "driver": self.driver,
            "description": self.description,
            "libraries": libs,
        }
        if self.notes:  # only host profiles have any: the built-in profiles' digests stay as they are
            doc["notes"] = dict(self.notes)
        if self.this_host:
            doc["this_host"] = True
        if not self.knows_interpreter:
            doc["knows_interpreter"] = False
        if self.stand_in is not None:
            doc["stand_in"] = self.stand_in.name
        return doc


def profile_from_json(data: Mapping[str, Any], origin: str = "profile", *, lazy: bool = False) -> Profile:
    """Build a Profile from its JSON document (see the module docstring); raises ProfileError. ``lazy``:
    a shared export table is cut on first use (for the built-in documents, whose tables are known good)."""
    if not isinstance(data, Mapping) or data.get("format") != PROFILE_FORMAT:
        raise ProfileError(f"{origin}: not an {PROFILE_FORMAT} document")
    try:
        if "base" in data:
            return _derived(data)
        glibc_text = data.get("glibc")
        glibc = None
        if glibc_text:
            major, minor = str(glibc_text).split(".")
            glibc = (int(major), int(minor))
        libs = tuple(_library(soname, entry, lazy) for soname, entry in dict(data["libraries"]).items())
        return Profile(
            name=str(data["name"]),
            machine=str(data.get("machine", "x86_64")),
            glibc=glibc,
            libraries=libs,
            driver=bool(data.get("driver", True)),
            description=str(data.get("description", "")),
            notes=tuple((str(k), str(v)) for k, v in dict(data.get("notes", {})).items()),
            this_host=bool(data.get("this_host", False)),
        )
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise ProfileError(f"{origin}: malformed profile ({exc})") from None


def _library(soname: str, entry: Mapping[str, Any], lazy: bool = False) -> SystemLibrary:
    exports = entry.get("exports")
    versions = frozenset(str(v) for v in entry.get("versions", ()))
    if isinstance(exports, str):
        file, _, source = exports.partition("#")
        table = _SharedExports(file, source or soname, versions)
        return SystemLibrary(soname, versions, table if lazy else dict(table))
    return SystemLibrary(
        soname=soname,
        versions=versions,
        exports=None if exports is None else {str(k): frozenset(map(str, v)) for k, v in exports.items()},
    )


@lru_cache(maxsize=8)
def _exports_file(file: str) -> dict[str, dict[str, list[str]]]:
    if "/" in file or not file.endswith(".json"):
        raise ProfileError(f"exports must name a data file of abiprobe, not {file!r}")
    text = resources.files("abiprobe").joinpath(f"data/profiles/{file}").read_text()
    libraries: dict[str, dict[str, list[str]]] = json.loads(text)["libraries"]
    return libraries


def _shared_exports(file: str, soname: str, versions: frozenset[str]) -> dict[str, frozenset[str]]:
    """A shared export table cut to ``versions``; glibc nodes older than the oldest kept one fold onto it
    (aarch64's first glibc is 2.17); unversioned base definitions (``""``, zlib's old API) are kept."""
    table = _exports_file(file).get(soname, {})
    glibc = sorted((v for v in versions if v.startswith("GLIBC_2.")), key=_version_tuple)
    floor = glibc[0] if glibc else None
    out: dict[str, frozenset[str]] = {}
    for name, defined in table.items():
        kept = set()
        for v in defined:
            if v in versions or v == "":
                kept.add(v)
            elif floor and v.startswith("GLIBC_2.") and _version_tuple(v) < _version_tuple(floor):
                kept.add(floor)
        if kept:
            out[name] = frozenset(kept)
    return out


class _SharedExports(Mapping[str, frozenset[str]]):
    """:func:`_shared_exports` cut on first use: a solve whose verdicts are all stored never asks."""

    def __init__(self, file: str, soname: str, versions: frozenset[str]) -> None:
        self._args = (file, soname, versions)
        self._table: dict[str, frozenset[str]] | None = None

    def _cut(self) -> dict[str, frozenset[str]]:
        if self._table is None:
            self._table = _shared_exports(*self._args)
        return self._table

    def __getitem__(self, name: str) -> frozenset[str]:
        return self._cut()[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self._cut().get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._cut())

    def __len__(self) -> int:
        return len(self._cut())

    def __repr__(self) -> str:
        return repr(self._cut())


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("_", 1)[1].split(".") if x.isdigit())


def _derived(data: Mapping[str, Any]) -> Profile:
    base = builtin_profile(str(data["base"]))
    removed = set(data.get("remove", ()))
    added = {s: _library(s, e) for s, e in dict(data.get("add", {})).items()}
    libs = [lib for lib in base.libraries if lib.soname not in removed and lib.soname not in added]
    return Profile(
        name=str(data.get("name", f"{base.name}+custom")),
        machine=base.machine,
        glibc=base.glibc,
        libraries=(*libs, *added.values()),
        driver=bool(data.get("driver", base.driver)) and DRIVER_SONAME not in removed,
        description=str(data.get("description", base.description)),
    )


@lru_cache(maxsize=16)
def builtin_profile(name: str) -> Profile:
    """One of ``BUILTIN_PROFILES`` (shipped as JSON under abiprobe/data/profiles). Its export tables are
    cut on first use, and its digest is that of the documents it is built from (the same content: the
    code that builds it is in every stored result's code digest), so that a solve answered from stored
    verdicts builds none of them."""
    document = _builtin_document(name)
    profile = profile_from_json(document, name, lazy=True)
    shared = sorted({str(e["exports"]).partition("#")[0] for e in document.get("libraries", {}).values()
                     if isinstance(e, Mapping) and isinstance(e.get("exports"), str)})  # fmt: skip
    sources = {
        "format": PROFILE_FORMAT,
        "builtin": name,
        "document": document,
        "exports": {f: hashlib.sha256(_data_file(f"profiles/{f}")).hexdigest() for f in shared},
    }
    digest = hashlib.sha256(json.dumps(sources, sort_keys=True).encode()).hexdigest()[:16]
    profile.__dict__["_digest"] = digest  # what the cached property would hold (this very object only)
    return profile


def _data_file(name: str) -> bytes:
    return resources.files("abiprobe").joinpath(f"data/{name}").read_bytes()


@lru_cache(maxsize=16)
def _builtin_document(name: str) -> dict[str, Any]:
    if name not in BUILTIN_PROFILES:
        raise UsageError(f"unknown profile {name!r}; built-in: {', '.join(BUILTIN_PROFILES)}")
    text = resources.files("abiprobe").joinpath(f"data/profiles/{name}.json").read_text()
    document: dict[str, Any] = json.loads(text)
    return document


def _builtin_glibc(name: str) -> tuple[int, int]:
    major, _, minor = str(_builtin_document(name).get("glibc") or "0.0").partition(".")
    return int(major), int(minor)


def load_profile(path: Path) -> Profile:
    """Read a profile file (JSON)."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile ({exc.strerror})") from None
    except ValueError as exc:
        raise ProfileError(f"{path}: not JSON ({exc})") from None
    return profile_from_json(data, str(path))


def profile_for(machine: str, glibc: tuple[int, int] | None) -> Profile:
    """The built-in profile with the newest glibc not above ``glibc`` for ``machine`` (2.28 when unknown)."""
    # chosen by the documents' headers: only the profile returned has its export tables built
    candidates = sorted(
        (n for n in BUILTIN_PROFILES if _builtin_document(n).get("machine", "x86_64") == machine),
        key=_builtin_glibc,
    )
    if not candidates:
        raise UsageError(f"no built-in profile for {machine}; pass --profile FILE")
    wanted = glibc or (2, 28)
    fitting = [n for n in candidates if _builtin_glibc(n) <= wanted]
    return builtin_profile(fitting[-1] if fitting else candidates[0])


@lru_cache(maxsize=1)
def stable_abi_added() -> dict[str, tuple[int, int]]:
    """Every stable-ABI symbol with the CPython version that added it to the stable ABI
    (abiprobe/data/profiles/stable_abi.json, taken from CPython's ``Misc/stable_abi.toml``)."""
    text = resources.files("abiprobe").joinpath("data/profiles/stable_abi.json").read_text()
    added: dict[str, list[str]] = json.loads(text)["added"]
    out: dict[str, tuple[int, int]] = {}
    for version, names in added.items():
        major, _, minor = version.partition(".")
        out.update({name: (int(major), int(minor)) for name in names})
    return out


@lru_cache(maxsize=32)
def stable_abi_names(floor: tuple[int, int] | None = None) -> frozenset[str]:
    """The stable-ABI symbol names an ``abi3`` extension built for CPython ``floor`` (its tag's ``cpXY``)
    may use: those added at or before it (every one when None)."""
    return frozenset(n for n, v in stable_abi_added().items() if floor is None or v <= floor)


def library_from_elf_bytes(soname: str, data: BinaryInput, path: str) -> SystemLibrary:
    """A SystemLibrary from the real bytes of a library (bytes or a seekable stream): its version
    definitions and exports."""
    from abiprobe.binary.elf import read_elf

    facts = read_elf(data, path)
    exports: dict[str, set[str]] = {}
    for sym in facts.exports:
        exports.setdefault(sym.name, set()).add(sym.version or "")
    base = facts.soname or soname
    versions = frozenset(v for v in facts.version_defs if v != base)
    return SystemLibrary(
        soname=soname, versions=versions, exports={k: frozenset(v) for k, v in exports.items()}
    )
