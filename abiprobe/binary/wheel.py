"""Wheels and unpacked trees -> WheelFacts: which members matter, their metadata, their ELF facts."""

from __future__ import annotations

import hashlib
import keyword
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from email.parser import HeaderParser
from functools import partial
from pathlib import Path
from typing import BinaryIO

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from abiprobe.binary.objects import inspect_stream, looks_like_binary_member
from abiprobe.binary.pysource import READ_RULES, scan_sources
from abiprobe.binary.wheel_members import dist_info_dir, installed_path
from abiprobe.binary.zipguard import copy_member, open_zip, zip_errors
from abiprobe.errors import BinaryFormatError, HashMismatchError, WheelFormatError
from abiprobe.model.facts import DistMetadata, ElfFacts, WheelFacts

_SPOOL_LIMIT = 64 << 20
_HASH_CHUNK = 1 << 20
MAX_SOURCE_BYTES = 1 << 20  # a larger .py file is generated data, not code that loads libraries
MAX_DATA_BYTES = 64 << 10  # a data file the package's code reads (json.load(open(...))), read when smaller
_DIST_INFO_FILES = ("METADATA", "WHEEL", "RECORD", "top_level.txt")

MemberOpener = Callable[[str], AbstractContextManager[BinaryIO]]


def select_members(
    names: Sequence[str], read: Callable[[str], bool] | None = None, *, unread_sources: frozenset[str]
) -> list[str]:
    """Members worth reading: shared objects, extensions and cubins, the dist-info files, and the Python
    sources :func:`is_package_source` takes (``unread_sources``: the stack's ``Stack.unread_sources()``).

    ``read`` narrows the binaries to those whose installed path it accepts."""
    info = dist_info_dir(names)
    wanted = {f"{info}/{f}" for f in _DIST_INFO_FILES}
    return [
        n
        for n in names
        if n in wanted
        or (looks_like_binary_member(n) and (read is None or read(installed_path(n))))
        or is_package_source(n, info, unread_sources)
    ]


def is_package_source(member: str, info: str, unread_sources: frozenset[str]) -> bool:
    """A .py member of the wheel's own code (read for what it loads, :mod:`abiprobe.binary.pysource`), unless
    its package is one of ``unread_sources``, whose loading the stack data says without it (torch:
    thousands of modules); such a package's ``version.py`` is still read (torch's ``cuda``,
    ``__version__``, which other code reads), and its ``_tensor.py`` (which attributes ``torch.Tensor``
    has, which other code tests: :data:`abiprobe.binary.pysource.CLASS_MODULES`). Stored facts depend on
    ``unread_sources``: they are kept under a key that names them
    (``abiprobe.store.reads.read_rules_key``)."""
    if not member.endswith(".py") or member.startswith(f"{info}/"):
        return False
    path = installed_path(member)
    top = path.split("/", 1)[0]
    return top not in unread_sources or path in (f"{top}/version.py", f"{top}/_tensor.py")  # its values


def parse_metadata(metadata: bytes, wheel_file: bytes | None, top_level: Iterable[str]) -> DistMetadata:
    """Parse METADATA (RFC 822 style) and WHEEL into DistMetadata (the headers only: a description of
    any size after them is never decoded)."""
    msg = HeaderParser().parsestr(_headers_only(metadata).decode("utf-8", errors="replace"))
    name, version = msg.get("Name"), msg.get("Version")
    if not name or not version:
        raise WheelFormatError("METADATA lacks Name or Version")
    tags: tuple[str, ...] = ()
    if wheel_file is not None:
        wmsg = HeaderParser().parsestr(wheel_file.decode("utf-8", errors="replace"))
        tags = tuple(wmsg.get_all("Tag") or ())
    return DistMetadata(
        name=name.strip(),
        version=version.strip(),
        requires_dist=tuple(r.strip() for r in msg.get_all("Requires-Dist") or ()),
        requires_python=(msg.get("Requires-Python") or None),
        tags=tags,
        top_level=tuple(sorted(set(top_level))),
    )


def _headers_only(text: bytes) -> bytes:
    ends = [i for i in (text.find(b"\n\n"), text.find(b"\r\n\r\n")) if i >= 0]
    return text[: min(ends) + 1] if ends else text


def top_level_of(paths: Iterable[str]) -> set[str]:
    """Import packages and modules a file list installs (first path component, module suffix stripped)."""
    tops: set[str] = set()
    for p in paths:
        first = p.split("/", 1)[0]
        if first.endswith((".dist-info", ".data")) or first in ("..", ""):
            continue
        if "/" in p:
            tops.add(first)
        elif first.endswith(".py"):
            tops.add(first[:-3])
        elif ".so" in first and not first.startswith("lib"):
            tops.add(first.split(".", 1)[0])
    return importable(tops)


def provided_tops(listed: Iterable[str], files: Sequence[str]) -> set[str]:
    """The top-level modules a distribution provides: those its ``top_level.txt`` lists that its files
    install (a stale entry is none: xxhash lists ``_xxhash``, an extension that moved into the package),
    else every module its files install."""
    shipped = top_level_of(files)
    named = importable(listed) & shipped if files else importable(listed)
    return named or shipped


def importable(names: Iterable[str]) -> set[str]:
    """The names ``import`` can take: identifiers, not keywords, not ``__pycache__``-like dunders (a
    vendored-library folder such as ``numpy.libs`` or a ``foo-bar`` directory is not a module)."""
    return {n for n in names if n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("__")}


def python_members(names: Sequence[str], unread_sources: frozenset[str]) -> list[str]:
    """The members of a wheel read for what its Python loads (:func:`is_package_source`)."""
    info = dist_info_dir(names)
    return [n for n in names if is_package_source(n, info, unread_sources)]


def with_python(
    facts: WheelFacts,
    members: Mapping[str, bytes],
    names: Sequence[str] = (),
    open_member: MemberOpener | None = None,
) -> WheelFacts:
    """``facts`` with their Python read again, under today's rules, from its members (name -> bytes);
    ``names`` and ``open_member``: the wheel's members, for the small data files its code reads."""
    sources = {installed_path(n): b for n, b in members.items() if len(b) <= MAX_SOURCE_BYTES}
    read = _data_reader(names, open_member) if open_member is not None else None
    return replace(facts, python=scan_sources(sources, read, facts.files), python_rules=READ_RULES)


def facts_from_members(
    filename: str,
    sha256: str,
    size: int,
    names: Sequence[str],
    open_member: MemberOpener,
    read: Callable[[str], bool] | None = None,
    *,
    verified: bool = False,
    directory_sha256: str | None = None,
    prepared: Mapping[str, ElfFacts] | None = None,
    unread_sources: frozenset[str],
) -> WheelFacts:
    """Build WheelFacts from a wheel's member list and a way to open (seekable) members by name.

    With ``read``, only binary members whose installed path it accepts are opened; the others are
    listed in ``unread`` (partial facts). ``verified`` says ``sha256`` was computed over the whole file.
    ``prepared`` holds facts of members already read (up to their loader tables), by member name;
    ``unread_sources`` the packages whose Python sources are not read (:func:`is_package_source`)."""
    info = dist_info_dir(names)

    def read_small(member: str) -> bytes | None:
        if member not in names:
            return None
        with open_member(member) as fh:
            return fh.read()

    metadata = read_small(f"{info}/METADATA")
    if metadata is None:
        raise WheelFormatError(f"{filename}: {info}/METADATA is missing")
    files = tuple(installed_path(n) for n in names if not n.endswith("/"))
    tl_raw = read_small(f"{info}/top_level.txt")
    tops = (
        {t.strip().split("/")[0] for t in tl_raw.decode(errors="replace").splitlines() if t.strip()}
        if tl_raw
        else top_level_of(files)
    )
    meta = parse_metadata(metadata, read_small(f"{info}/WHEEL"), tops)
    objects = _BinaryReads()
    unread: list[str] = []
    sources: dict[str, bytes] = {}
    for member in names:
        if is_package_source(member, info, unread_sources):
            text = read_small(member)
            if text is not None and len(text) <= MAX_SOURCE_BYTES:
                sources[installed_path(member)] = text
        if not looks_like_binary_member(member):
            continue
        target = installed_path(member)
        if read is not None and not read(target):
            unread.append(target)
            continue
        early = (prepared or {}).get(member)
        if early is not None:
            objects.elf.append(replace(early, path=target))
            continue
        objects.read(target, partial(open_member, member))
    return WheelFacts(
        filename=filename,
        sha256=sha256,
        size=size,
        metadata=meta,
        files=files,
        elf=tuple(objects.elf),
        errors=tuple(objects.errors),
        unread=tuple(unread),
        unreadable=tuple(objects.unreadable),
        verified=verified,
        directory_sha256=directory_sha256,
        python=scan_sources(sources, _data_reader(names, open_member), files),
        python_rules=READ_RULES,
    )


def _data_reader(names: Sequence[str], open_member: MemberOpener) -> Callable[[str], bytes | None]:
    """The bytes of a small file of the wheel by installed path (None: absent, a binary, or too large)."""
    by_path = {installed_path(n): n for n in names if not n.endswith("/") and not looks_like_binary_member(n)}

    def read(path: str) -> bytes | None:
        member = by_path.get(path)
        if member is None:
            return None
        with open_member(member) as fh:
            data = fh.read(MAX_DATA_BYTES + 1)
        return data if len(data) <= MAX_DATA_BYTES else None

    return read


class _BinaryReads:
    """ELF facts of binary members, and the members that are no loadable object (with the reason).

    A member named like a library or an extension that is text, truncated or otherwise unreadable is
    what the loader would fail on: it is recorded, never skipped."""

    def __init__(self) -> None:
        self.elf: list[ElfFacts] = []
        self.errors: list[str] = []
        self.unreadable: list[str] = []

    def read(self, path: str, opener: Callable[[], AbstractContextManager[BinaryIO]]) -> None:
        try:
            with opener() as fh:
                head = fh.read(4)
                if head != b"\x7fELF":
                    if _is_linker_script(head + fh.read(60)):
                        return  # read by the static linker only: the dynamic loader never opens it
                    shown = "empty" if not head else f"starts with {head[:4]!r}"
                    raise BinaryFormatError(f"{path}: not an ELF object ({shown})")
                self.elf.append(inspect_stream(fh, path))
        except BinaryFormatError as exc:
            reason = str(exc)
            self.errors.append(reason if reason.startswith(f"{path}:") else f"{path}: {reason}")
            self.unreadable.append(path)
        except OSError as exc:
            self.errors.append(f"{path}: cannot read: {exc.strerror or exc}")
            self.unreadable.append(path)


class _ZipMembers:
    """Opens members of a local zip as seekable files: stored ones in place, others via a spool file."""

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self.zf = zf

    def __call__(self, name: str) -> AbstractContextManager[BinaryIO]:
        return _spooled(self.zf, name)


class _spooled(AbstractContextManager[BinaryIO]):
    def __init__(self, zf: zipfile.ZipFile, name: str) -> None:
        self.zf, self.name = zf, name
        self.tmp: tempfile.SpooledTemporaryFile[bytes] | None = None

    def __enter__(self) -> BinaryIO:
        self.tmp = tempfile.SpooledTemporaryFile(max_size=_SPOOL_LIMIT)
        try:
            copy_member(self.zf, self.name, self.tmp)
        except BaseException:
            self.tmp.close()
            raise
        self.tmp.seek(0)
        return self.tmp  # type: ignore[return-value]

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            self.tmp.close()


def wheel_facts_from_path(
    path: Path,
    expected_sha256: str | None = None,
    *,
    known_sha256: str | None = None,
    unread_sources: frozenset[str],
) -> WheelFacts:
    """Inspect a local wheel file (hash-checked when ``expected_sha256`` is given). ``known_sha256`` is
    the file's digest when the caller has just established it (``local_sha256``): not hashed again.
    ``unread_sources``: as :func:`is_package_source` takes them."""
    try:
        parse_wheel_filename(path.name)
    except InvalidWheelFilename as exc:
        raise WheelFormatError(f"{path.name}: not a valid wheel filename ({exc})") from None
    try:
        digest = known_sha256 or hash_file(path)
        size = path.stat().st_size
    except OSError as exc:
        raise WheelFormatError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if expected_sha256 is not None and digest != expected_sha256.lower():
        raise HashMismatchError(f"{path.name}: sha256 {digest} does not match the expected {expected_sha256}")
    with open_zip(path, path.name) as zf, zip_errors(path.name):
        names = zf.namelist()
        return facts_from_members(
            path.name, digest, size, names, _ZipMembers(zf), verified=True, unread_sources=unread_sources
        )


def facts_from_tree(
    root: Path, files: Sequence[str], filename: str, metadata: DistMetadata, *, unread_sources: frozenset[str]
) -> WheelFacts:
    """Facts for files laid out under ``root`` (an unpacked wheel or an installed distribution);
    ``unread_sources``: as :func:`is_package_source` takes them."""
    objects = _BinaryReads()
    sources: dict[str, bytes] = {}
    for rel in files:
        p = root / rel
        if looks_like_binary_member(rel) and p.exists():
            objects.read(rel, partial(_open_binary, p))
        elif (
            ".dist-info/" not in rel
            and is_package_source(rel, "", unread_sources)
            and p.is_file()
            and p.stat().st_size <= MAX_SOURCE_BYTES
        ):
            sources[rel] = p.read_bytes()
    return WheelFacts(
        filename=filename,
        sha256="",
        size=0,
        metadata=metadata,
        files=tuple(files),
        elf=tuple(objects.elf),
        errors=tuple(objects.errors),
        unreadable=tuple(objects.unreadable),
        python=scan_sources(sources, partial(_tree_data, root, frozenset(files)), files),
        python_rules=READ_RULES,
    )


def _tree_data(root: Path, files: frozenset[str], path: str) -> bytes | None:
    """The bytes of a small file of an unpacked tree by its path (None: absent, a binary, or too large)."""
    p = root / path
    if path not in files or path.startswith("/") or ".." in path.split("/") or looks_like_binary_member(path):
        return None
    if not p.is_file():
        return None
    if p.stat().st_size > MAX_DATA_BYTES:
        return None
    return p.read_bytes()


_LINKER_SCRIPT_STARTS = (b"/* GNU ld script", b"INPUT(", b"INPUT (", b"GROUP(", b"GROUP (", b"OUTPUT_FORMAT(")


def _is_linker_script(head: bytes) -> bool:
    """A ``libfoo.so`` that is a GNU ld script (as glibc's ``libc.so``): text for ``ld``, not a library."""
    return head.lstrip().startswith(_LINKER_SCRIPT_STARTS)


def _open_binary(path: Path) -> BinaryIO:
    return path.open("rb")


def hash_file(path: Path) -> str:
    """sha256 of a file, read in 1 MiB pieces."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()
