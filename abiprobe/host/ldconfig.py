"""This machine's system libraries, found as its own ld.so finds them and read from their real bytes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from abiprobe.analyze.profiles import DRIVER_SONAME, Profile, SystemLibrary, library_from_elf_bytes
from abiprobe.host.loader_inputs import HostLoader

HOST_LIBRARIES = (
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "libresolv.so.2",
    "libstdc++.so.6",
    "libgcc_s.so.1",
    "libnuma.so.1",
    "libz.so.1",
)


def ldconfig_paths(sonames: Iterable[str], loader: HostLoader | None = None) -> dict[str, Path]:
    """Where this host's loader finds each soname it finds (see :class:`HostLoader`)."""
    loader = loader or HostLoader()
    found = {s: loader.find(s) for s in dict.fromkeys(sonames)}
    return {s: hit[0] for s, hit in found.items() if hit is not None}


def read_library(soname: str, path: Path) -> SystemLibrary:
    """A host library from its file: only its loader tables are read (a stream, not the whole file)."""
    with open(path, "rb") as f:
        lib = library_from_elf_bytes(soname, f, str(path))
    # a version node named like the soname (libcudart.so.13 defines one beside its base entry) goes with
    # the base entry's name; every version its exports are defined under is a node it has
    defined = {v for versions in (lib.exports or {}).values() for v in versions if v}
    return replace(lib, versions=lib.versions | defined, origin=str(path))


def interpreter_libraries(python: str | Path, loader: HostLoader | None = None) -> dict[str, Path]:
    """The shared libraries the interpreter ``python`` itself needs (a shared build of CPython needs its
    ``libpython3.X.so.1.0``), where its own RPATH/RUNPATH (``$ORIGIN/../lib``) or this host's loader finds
    each: they are in the process before any extension loads, matched by soname. Empty when the file is
    not an ELF program that can be read."""
    from abiprobe.binary.elf import read_elf
    from abiprobe.errors import BinaryFormatError

    exe = Path(python).resolve()  # a venv's python is a link to the base interpreter
    try:
        with open(exe, "rb") as f:
            facts = read_elf(f, str(exe))
    except (OSError, ValueError, BinaryFormatError):  # a launcher script (pyenv's shims), say
        return {}
    loader = loader or HostLoader()
    found: dict[str, Path] = {}
    for soname in facts.needed:
        dirs = [Path(d.replace("$ORIGIN", str(exe.parent)).replace("${ORIGIN}", str(exe.parent)))
                for d in (*facts.rpath, *facts.runpath)]  # fmt: skip
        hit = next((d / soname for d in dirs if (d / soname).is_file()), None)
        if hit is None and (seen := loader.find(soname)) is not None:
            hit = seen[0]
        if hit is not None:
            found[soname] = hit
    return found


def profile_from_host(
    sonames: Iterable[str] = (),
    driver: bool | None = None,
    loader: HostLoader | None = None,
    interpreter: str | Path | None = None,
    stand_in: Profile | None = None,
) -> Profile:
    """This machine as the system of an installed environment: glibc, libstdc++ and the C runtime, plus
    every one of ``sonames`` its loader finds, read from their real bytes; a soname that sits in an
    ld.so.conf directory without being in the loader cache is noted as such; any other library is looked
    up when asked for (one the package's Python loads by name). ``interpreter``: the Python that runs the
    environment, whose own libraries (a shared build's libpython) count as found (None: not known).
    ``stand_in``: the built-in profile of the platform this host stands for, when it is a check's target."""
    import platform

    loader = loader or HostLoader()
    wanted = [s for s in dict.fromkeys((*HOST_LIBRARIES, *sonames)) if s != DRIVER_SONAME]
    libs: list[SystemLibrary] = []
    notes: list[tuple[str, str]] = []
    own = interpreter_libraries(interpreter, loader) if interpreter is not None else {}
    for soname in wanted:
        if soname in own and soname not in HOST_LIBRARIES:
            try:
                libs.append(read_library(soname, own[soname]))
                continue
            except (OSError, ValueError):
                pass
        hit = loader.find(soname)
        if hit is not None:
            try:
                libs.append(read_library(soname, hit[0]))
            except (OSError, ValueError) as exc:
                notes.append((soname, f"{hit[0]} could not be read ({exc})"))
            continue
        stale = loader.uncached(soname)
        if stale is not None:
            notes.append((soname, f"{stale} is in a directory of {loader.conf} but not in the loader cache "
                          f"{loader.cache}: ld.so does not find it until ldconfig is run"))  # fmt: skip
    libc = next((lib for lib in libs if lib.soname == "libc.so.6"), None)
    has_driver = driver if driver is not None else loader.find(DRIVER_SONAME) is not None
    return Profile(
        name="host",
        machine=platform.machine(),
        glibc=_glibc_of(libc),
        libraries=tuple(libs),
        driver=has_driver,
        description=loader.describe(),
        notes=tuple(notes),
        this_host=True,
        knows_interpreter=interpreter is not None,
        stand_in=stand_in,
        lookup=_looked_up(loader),
    )


def _looked_up(loader: HostLoader) -> Callable[[str], SystemLibrary | None]:
    """A library the host's loader finds by soname, read once; None when it finds none or cannot read it."""

    @lru_cache(maxsize=256)
    def lookup(soname: str) -> SystemLibrary | None:
        if soname == DRIVER_SONAME:
            return None  # the driver is the profile's ``driver``
        hit = loader.find(soname)
        if hit is None:
            return None
        try:
            return read_library(soname, hit[0])
        except (OSError, ValueError):
            return None

    return lookup


def _glibc_of(libc: SystemLibrary | None) -> tuple[int, int] | None:
    """The newest GLIBC_2.x version node the host's libc defines: its glibc release."""
    if libc is None:
        return None
    found = [
        tuple(map(int, m.groups())) for v in libc.versions if (m := re.fullmatch(r"GLIBC_(\d+)\.(\d+)", v))
    ]
    return max(found) if found else None  # type: ignore[return-value]
