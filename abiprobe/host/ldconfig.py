"""This machine's system libraries, found through ``ldconfig -p`` and read from their real bytes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path

from abiprobe.analyze.profiles import DRIVER_SONAME, Profile, library_from_elf_bytes

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


def ldconfig_paths(sonames: Iterable[str]) -> dict[str, Path]:
    """Where ``ldconfig -p`` says this host keeps each soname (first match of this machine's class)."""
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    wanted = set(sonames)
    found: dict[str, Path] = {}
    for line in out.splitlines():
        name, _, rest = line.strip().partition(" (")
        if name in wanted and name not in found and "=>" in rest and ("x86-64" in rest or "64" in rest):
            found[name] = Path(rest.split("=>", 1)[1].strip())
    return found


def profile_from_host(sonames: Iterable[str] = HOST_LIBRARIES, driver: bool | None = None) -> Profile:
    """This machine's libraries, read from their real bytes (versions and exports)."""
    import platform

    paths = ldconfig_paths(sonames)
    libs = tuple(library_from_elf_bytes(s, p.read_bytes(), str(p)) for s, p in paths.items())
    libc, version = platform.libc_ver()
    glibc = None
    if libc == "glibc" and version.count(".") == 1:
        major, minor = version.split(".")
        glibc = (int(major), int(minor))
    has_driver = driver if driver is not None else bool(ldconfig_paths([DRIVER_SONAME]))
    return Profile(
        name="host",
        machine=platform.machine(),
        glibc=glibc,
        libraries=libs,
        driver=has_driver,
        description="read from this machine's libraries (ldconfig -p)",
    )
