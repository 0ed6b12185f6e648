"""Frozen facts learned from binaries and wheels: the contract between readers, cache and analysis.

Every reader returns these; the cache stores them as JSON (``to_json``/``from_json``) keyed by the
wheel's sha256; analysis consumes them. Nothing here does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from abiprobe.model.candidate import IndexFile

FACTS_SCHEMA_VERSION = 1
SUMMARY_VERSION = 3  # WheelSummary's own fields; a stored summary of another version is rebuilt
DRIVER_SONAME = "libcuda.so.1"
_DRIVER_FUNCTION = re.compile(r"^cu[A-Z][A-Za-z0-9_]*$")

GpuCodeKind = Literal["sass", "ptx", "ltoir"]
GpuVariant = Literal["", "a", "f"]


@dataclass(frozen=True)
class SymbolExport:
    """A defined dynamic symbol; ``default`` is True for ``name@@VER`` and for unversioned ones."""

    name: str
    version: str | None = None
    default: bool = True
    kind: str = "FUNC"  # FUNC, OBJECT, TLS, IFUNC, NOTYPE
    binding: str = "GLOBAL"  # GLOBAL, WEAK, GNU_UNIQUE

    def display(self) -> str:
        if self.version is None:
            return self.name
        return f"{self.name}{'@@' if self.default else '@'}{self.version}"


@dataclass(frozen=True)
class SymbolImport:
    """An undefined dynamic symbol; ``version``/``version_file`` come from .gnu.version_r."""

    name: str
    version: str | None = None
    version_file: str | None = None
    weak: bool = False

    def display(self) -> str:
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True)
class VersionNeed:
    """One ``.gnu.version_r`` entry: a needed file and the version names required from it."""

    file: str
    versions: tuple[str, ...]


@dataclass(frozen=True)
class GpuCode:
    """One entry of a fatbin container, or a standalone cubin."""

    kind: GpuCodeKind
    sm: int  # 90, 100, 120, 121 ...
    variant: GpuVariant = ""
    ptx_isa: str | None = None  # "9.0" for PTX entries; None otherwise
    compressed: str | None = None  # None, "lz4", "zstd"
    container: str = ""  # section the container sits in: .nv_fatbin, __nv_relfatbin, .rodata, <cubin>
    size: int = 0  # payload size in bytes (compressed size where compressed)

    def label(self) -> str:
        prefix = "sm" if self.kind == "sass" else ("compute" if self.kind == "ptx" else "lto")
        return f"{prefix}_{self.sm}{self.variant}"


@dataclass(frozen=True)
class ElfFacts:
    """What the loader and the GPU driver will care about in one ELF object."""

    path: str  # path inside the wheel / directory, or the file name given
    elf_class: int  # 32 or 64
    machine: str  # "x86_64", "aarch64", "cuda" ...
    elf_type: str = "DYN"  # DYN, EXEC, REL
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    exports: tuple[SymbolExport, ...] = ()
    imports: tuple[SymbolImport, ...] = ()
    version_needs: tuple[VersionNeed, ...] = ()
    version_defs: tuple[str, ...] = ()
    gpu_code: tuple[GpuCode, ...] = ()
    sha256: str | None = None
    size: int = 0
    # indexes into ``imports`` in the order ld.so looks them up relocating with RTLD_NOW (DT_REL/DT_RELA,
    # then DT_JMPREL); None where the relocation tables were not read (facts stored before they were)
    binding_order: tuple[int, ...] | None = None
    # True when the object was read only up to its loader tables (the bytes after them, any fatbin among
    # them, never inflated): ``gpu_code`` is then empty because it was not read, and ``sha256`` is None
    gpu_unread: bool = False

    def cuda_majors(self) -> tuple[int, ...]:
        """CUDA major versions implied by the CUDA sonames this object needs (libcudart.so.13 -> 13)."""
        from abiprobe.model.sonames import cuda_major_of_soname

        majors = {m for n in self.needed if (m := cuda_major_of_soname(n)) is not None}
        return tuple(sorted(majors))


@dataclass(frozen=True)
class PyEvent:
    """One thing a module's code does that loads code: ``import`` (a dotted module name, ``*`` parts
    unknown), ``load`` (a library by path: an installed-path glob, ``{param}`` for a function parameter,
    ``{=expr=}`` for a value the set and target fix), or ``call`` (a function of the package, with its
    constant string arguments, ``""`` for others); and the control flow around them (``if`` on a run-time
    value, ``for`` over a list or a glob, ``try``, ``raise``, ``break``, ``continue``, ``return``)."""

    kind: str
    target: str
    api: str = ""  # load: torch.ops.load_library, torch.classes.load_library, ctypes.CDLL ...
    args: tuple[str, ...] = ()
    line: int = 0
    body: tuple[PyEvent, ...] = ()  # if / for / try: the events of the body
    orelse: tuple[PyEvent, ...] = ()  # if: the else branch; for: its else; try: the handler
    expr: str = ""  # load: the path expression's source text, kept where it could not be evaluated
    # if: the program computing the test from what the module computed before it (abiprobe.binary.pyslice);
    # load (with expr): the program computing the path with the package's own search, run on the set's files
    setup: str = ""


def all_events(events: tuple[PyEvent, ...]) -> Iterator[PyEvent]:
    """Every event of ``events``, those nested in control flow included, in source order."""
    for e in events:
        yield e
        yield from all_events(e.body)
        yield from all_events(e.orelse)


@dataclass(frozen=True)
class PyFunction:
    name: str
    params: tuple[str, ...]
    events: tuple[PyEvent, ...]


@dataclass(frozen=True)
class PyModule:
    """A module of the wheel's own Python code: what its top level runs at import, in order, and what its
    functions run when called (``scanned`` False: read for imports only)."""

    name: str
    path: str
    events: tuple[PyEvent, ...]
    functions: tuple[PyFunction, ...] = ()
    scanned: bool = True
    # top-level constants (``cuda = '12.8'``; None for ``hip = None``), kept for version modules only
    constants: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class DistMetadata:
    """The parts of a wheel's METADATA / WHEEL / RECORD that analysis needs."""

    name: str
    version: str
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None
    tags: tuple[str, ...] = ()  # from the WHEEL file
    top_level: tuple[str, ...] = ()  # import packages / modules the wheel installs


@dataclass(frozen=True)
class WheelFacts:
    """Everything learned from one wheel, keyed by its sha256 and never recomputed."""

    filename: str
    sha256: str
    size: int
    metadata: DistMetadata
    files: tuple[str, ...] = ()  # every path the wheel installs (RECORD order)
    elf: tuple[ElfFacts, ...] = ()
    errors: tuple[str, ...] = ()  # per-member problems that did not stop the whole wheel
    # installed paths of binary members not read yet (a solve reads only what the loader reaches of a
    # runtime wheel); empty for complete facts, the only kind commands other than ``solve`` accept
    unread: tuple[str, ...] = ()
    # installed paths of binary members that were read and are not loadable objects (``errors`` says why)
    unreadable: tuple[str, ...] = ()
    # True when ``sha256`` was computed over every byte of the file these facts were read from; range
    # reads are not: they are kept only while the central directory they were read through
    # (``directory_sha256``) is what the server still serves
    verified: bool = False
    directory_sha256: str | None = None
    # the wheel's own Python code, read for what it loads (abiprobe.binary.pysource); None: not read
    python: tuple[PyModule, ...] | None = None
    schema_version: int = FACTS_SCHEMA_VERSION
    # the version of the rules ``python`` was read under (abiprobe.binary.pysource.READ_RULES; 0: facts
    # stored before the rules were stamped): older ones are read again where the wheel can be read
    python_rules: int = 0

    @property
    def partial(self) -> bool:
        """Some binary was not read, or read without its GPU code: only a solve's runtime reads use these."""
        return bool(self.unread) or any(e.gpu_unread for e in self.elf)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WheelFacts:
        return _wheel_facts_from_json(data)

    def merged(self, more: WheelFacts) -> WheelFacts:
        """These facts plus the members ``more`` (another partial read of the same wheel) has read."""
        if more.sha256 != self.sha256:
            raise ValueError(f"cannot merge facts of {more.filename} into {self.filename}")
        theirs = {e.path: e for e in more.elf}
        # a member read whole (with its GPU code) replaces one read only up to its loader tables
        mine = [
            theirs[e.path] if e.gpu_unread and not theirs.get(e.path, e).gpu_unread else e for e in self.elf
        ]
        have = {e.path for e in mine}
        elf = [*mine, *(e for e in more.elf if e.path not in have)]
        order = {path: i for i, path in enumerate(self.files)}
        elf.sort(key=lambda e: order.get(e.path, len(order)))
        still = set(more.unread)
        return WheelFacts(
            filename=self.filename,
            sha256=self.sha256,
            size=self.size,
            metadata=self.metadata,
            files=self.files,
            elf=tuple(elf),
            errors=tuple(dict.fromkeys((*self.errors, *more.errors))),
            unread=tuple(p for p in self.unread if p in still),
            unreadable=tuple(dict.fromkeys((*self.unreadable, *more.unreadable))),
            verified=self.verified and more.verified,
            directory_sha256=more.directory_sha256 or self.directory_sha256,
            python=self.python if self.python is not None else more.python,
            schema_version=self.schema_version,
            python_rules=self.python_rules if self.python is not None else more.python_rules,
        )

    def summary(self) -> WheelSummary:
        """The small part of these facts that choosing candidates needs (no symbols, no GPU code)."""
        needed = dict.fromkeys(n for e in self.elf for n in e.needed)
        return WheelSummary(
            self.filename,
            self.sha256,
            self.size,
            self.metadata,
            self.files,
            tuple(needed),
            _driver_imports(self.elf),
            self.unread,
            self.verified,
            self.directory_sha256,
            gpu_unread=tuple(e.path for e in self.elf if e.gpu_unread),
        )


@dataclass(frozen=True)
class WheelSummary:
    """What a solve needs of a wheel before any analysis: metadata, installed files, needed sonames.

    Cached beside the full facts (a few kB against megabytes of symbols), so a warm solve whose verdicts
    are stored never decodes a symbol table. ``needed`` is every DT_NEEDED soname, first seen first.
    """

    filename: str
    sha256: str
    size: int
    metadata: DistMetadata
    files: tuple[str, ...] = ()
    needed: tuple[str, ...] = ()
    # CUDA driver API functions (with symbol version) imported by objects linking libcuda.so.1
    driver_imports: tuple[tuple[str, str | None], ...] = ()
    unread: tuple[str, ...] = ()  # as in WheelFacts: ``needed`` and ``driver_imports`` omit these members
    verified: bool = False  # as in WheelFacts
    directory_sha256: str | None = None
    schema_version: int = FACTS_SCHEMA_VERSION
    summary_version: int = SUMMARY_VERSION
    gpu_unread: tuple[str, ...] = ()  # members read without their GPU code (ElfFacts.gpu_unread)

    @property
    def partial(self) -> bool:
        return bool(self.unread or self.gpu_unread)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WheelSummary:
        return WheelSummary(
            filename=data["filename"],
            sha256=data["sha256"],
            size=data["size"],
            metadata=_metadata_from_json(data["metadata"]),
            files=tuple(data.get("files", ())),
            needed=tuple(data.get("needed", ())),
            driver_imports=tuple((str(n), v) for n, v in data.get("driver_imports", ())),
            unread=tuple(data.get("unread", ())),
            verified=data.get("verified") is True,
            directory_sha256=_optional_str(data.get("directory_sha256")),
            schema_version=data.get("schema_version", FACTS_SCHEMA_VERSION),
            summary_version=data.get("summary_version", 0),
            gpu_unread=tuple(data.get("gpu_unread", ())),
        )


class WheelInfo:
    """A wheel's summary now, and where its full facts are had (decoding symbol tables costs seconds):
    ``origin`` is plain data, the listed file (``abiprobe.model.candidate.IndexFile``), a local wheel's
    path, or None (the stored entry alone), which the ``abiprobe.solve.ports.FullFacts`` port loads from;
    ``held``: full facts already in memory (just read), which need no loading."""

    __slots__ = ("held", "origin", "summary")

    def __init__(
        self, summary: WheelSummary, origin: IndexFile | Path | None = None, held: WheelFacts | None = None
    ) -> None:
        self.summary = summary
        self.origin = origin
        self.held = held

    @classmethod
    def of(cls, facts: WheelFacts) -> WheelInfo:
        return cls(facts.summary(), held=facts)

    @property
    def sha256(self) -> str:
        return self.summary.sha256


def _driver_imports(elf: tuple[ElfFacts, ...]) -> tuple[tuple[str, str | None], ...]:
    """Driver API functions (``cu*``) imported, with any symbol version, by objects that need libcuda."""
    found: set[tuple[str, str | None]] = set()
    for e in elf:
        if not any(n.startswith("libcuda.so") for n in e.needed):
            continue
        for imp in e.imports:
            if _DRIVER_FUNCTION.match(imp.name) and imp.version_file in (None, DRIVER_SONAME):
                found.add((imp.name, imp.version))
    return tuple(sorted(found, key=lambda s: (s[0], s[1] or "")))


def elf_facts_to_json(facts: ElfFacts) -> dict[str, Any]:
    return asdict(facts)


def elf_facts_from_json(data: dict[str, Any]) -> ElfFacts:
    """Rebuild ElfFacts from ``asdict`` output; the leaf records are built directly, which keeps
    loading a 100k-symbol entry cheap."""
    d = dict(data)
    d["exports"] = tuple(SymbolExport(**e) for e in d.get("exports", ()))
    d["imports"] = tuple(SymbolImport(**i) for i in d.get("imports", ()))
    d["version_needs"] = tuple(
        VersionNeed(v["file"], tuple(v["versions"])) for v in d.get("version_needs", ())
    )
    d["gpu_code"] = tuple(GpuCode(**g) for g in d.get("gpu_code", ()))
    for key in ("needed", "rpath", "runpath", "version_defs"):
        d[key] = tuple(d.get(key, ()))
    if d.get("binding_order") is not None:
        d["binding_order"] = tuple(d["binding_order"])
    return ElfFacts(**{k: v for k, v in d.items() if k in _ELF_FIELDS})


def _metadata_from_json(data: dict[str, Any]) -> DistMetadata:
    meta = dict(data)
    for key in ("requires_dist", "tags", "top_level"):
        meta[key] = tuple(meta.get(key, ()))
    return DistMetadata(**{k: v for k, v in meta.items() if k in _META_FIELDS})


def _wheel_facts_from_json(data: dict[str, Any]) -> WheelFacts:
    return WheelFacts(
        filename=data["filename"],
        sha256=data["sha256"],
        size=data["size"],
        metadata=_metadata_from_json(data["metadata"]),
        files=tuple(data.get("files", ())),
        elf=tuple(elf_facts_from_json(e) for e in data.get("elf", ())),
        errors=tuple(data.get("errors", ())),
        unread=tuple(data.get("unread", ())),
        unreadable=tuple(data.get("unreadable", ())),
        verified=data.get("verified") is True,
        directory_sha256=_optional_str(data.get("directory_sha256")),
        python=_python_from_json(data.get("python")),
        schema_version=data.get("schema_version", FACTS_SCHEMA_VERSION),
        python_rules=int(data.get("python_rules", 0)),
    )


def _event(d: dict[str, Any]) -> PyEvent:
    return PyEvent(
        d["kind"],
        d["target"],
        d.get("api", ""),
        tuple(d.get("args", ())),
        d.get("line", 0),
        tuple(_event(e) for e in d.get("body", ())),
        tuple(_event(e) for e in d.get("orelse", ())),
        str(d.get("expr", "")),
        str(d.get("setup", "")),
    )


def _python_from_json(data: Any) -> tuple[PyModule, ...] | None:
    if data is None:
        return None
    return tuple(
        PyModule(
            m["name"],
            m["path"],
            tuple(_event(e) for e in m.get("events", ())),
            tuple(
                PyFunction(
                    f["name"], tuple(f.get("params", ())), tuple(_event(e) for e in f.get("events", ()))
                )
                for f in m.get("functions", ())
            ),
            bool(m.get("scanned", True)),
            tuple((str(k), None if v is None else str(v)) for k, v in m.get("constants", ())),
        )
        for m in data
    )


def _optional_str(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected a string, found {value!r}")
    return value


_ELF_FIELDS = frozenset(f.name for f in fields(ElfFacts))
_META_FIELDS = frozenset(f.name for f in fields(DistMetadata))


__all__ = [
    "FACTS_SCHEMA_VERSION",
    "DistMetadata",
    "ElfFacts",
    "GpuCode",
    "PyEvent",
    "PyFunction",
    "PyModule",
    "SymbolExport",
    "SymbolImport",
    "VersionNeed",
    "WheelFacts",
    "WheelInfo",
    "WheelSummary",
    "all_events",
    "elf_facts_from_json",
    "elf_facts_to_json",
]
