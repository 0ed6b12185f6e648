"""This machine's system libraries, found as its own ld.so finds them and read from their real bytes."""

from __future__ import annotations

import re
from collections.abc import Iterable
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
        return library_from_elf_bytes(soname, f, str(path))


def profile_from_host(
    sonames: Iterable[str] = (), driver: bool | None = None, loader: HostLoader | None = None
) -> Profile:
    """This machine as the system of an installed environment: glibc, libstdc++ and the C runtime, plus
    every one of ``sonames`` its loader finds, read from their real bytes; a soname that sits in an
    ld.so.conf directory without being in the loader cache is noted as such."""
    import platform

    loader = loader or HostLoader()
    wanted = [s for s in dict.fromkeys((*HOST_LIBRARIES, *sonames)) if s != DRIVER_SONAME]
    libs: list[SystemLibrary] = []
    notes: list[tuple[str, str]] = []
    for soname in wanted:
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
    )


def _glibc_of(libc: SystemLibrary | None) -> tuple[int, int] | None:
    """The newest GLIBC_2.x version node the host's libc defines: its glibc release."""
    if libc is None:
        return None
    found = [
        tuple(map(int, m.groups())) for v in libc.versions if (m := re.fullmatch(r"GLIBC_(\d+)\.(\d+)", v))
    ]
    return max(found) if found else None  # type: ignore[return-value]
