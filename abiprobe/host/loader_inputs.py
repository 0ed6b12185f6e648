"""This machine's loader inputs as ld.so reads them: LD_LIBRARY_PATH, /etc/ld.so.cache and the system
search path, a library found by its file name there; /etc/ld.so.conf (with its includes) only to say why
a library in one of its directories is not found (ld.so reads the cache ldconfig built from it, not it)."""

from __future__ import annotations

import glob
import os
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

DEFAULT_CACHE = Path("/etc/ld.so.cache")
DEFAULT_CONF = Path("/etc/ld.so.conf")
_NEW_MAGIC = b"glibc-ld.so.cache1.1"
_OLD_MAGIC = b"ld.so-1.7.0"
_NEW_HEADER = 48  # magic and version (20), nlibs, len_strings, flags and padding, extension offset, unused
_NEW_ENTRY = struct.Struct("=iIIIQ")  # flags, key, value, osversion, hwcap
_OLD_ENTRY = 12  # flags, key, value
_LD_SO = {"x86_64": "/lib64/ld-linux-x86-64.so.2", "aarch64": "/lib/ld-linux-aarch64.so.1"}


def read_ld_cache(data: bytes) -> list[tuple[str, str, int]]:
    """(soname, path, hwcap) of every entry of an ld.so.cache image, in the cache's order (glibc's
    new format, alone or after the old one); empty for an image of another format."""
    base = 0
    if data.startswith(_OLD_MAGIC):
        (nlibs,) = struct.unpack_from("=I", data, 12)
        base = (16 + nlibs * _OLD_ENTRY + 7) & ~7
    if data[base : base + len(_NEW_MAGIC)] != _NEW_MAGIC:
        return []
    (nlibs,) = struct.unpack_from("=I", data, base + 20)
    out: list[tuple[str, str, int]] = []
    for i in range(nlibs):
        at = base + _NEW_HEADER + i * _NEW_ENTRY.size
        if at + _NEW_ENTRY.size > len(data):
            break
        _flags, key, value, _os, hwcap = _NEW_ENTRY.unpack_from(data, at)
        out.append((_cstring(data, base + key), _cstring(data, base + value), hwcap))
    return out


def _cstring(data: bytes, at: int) -> str:
    end = data.find(b"\0", at)
    return data[at : end if end >= 0 else len(data)].decode("utf-8", "replace")


def read_ld_conf(path: Path, seen: set[Path] | None = None) -> list[Path]:
    """The directories an ld.so.conf lists, its ``include`` globs followed (relative ones from its own
    directory, as ldconfig does); ``hwcap`` lines and comments skipped; a missing file lists none."""
    seen = set() if seen is None else seen
    if path in seen:
        return []
    seen.add(path)
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    dirs: list[Path] = []
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("hwcap "):
            continue
        if line.startswith("include ") or line.startswith("include\t"):
            for pattern in line.split()[1:]:
                full = pattern if pattern.startswith("/") else str(path.parent / pattern)
                for inc in sorted(glob.glob(full)):
                    dirs += read_ld_conf(Path(inc), seen)
            continue
        for entry in line.replace(",", " ").replace(":", " ").split():
            dirs.append(Path(entry.split("=", 1)[0]))
    return dirs


def system_search_path(ld_so: str | None = None) -> tuple[Path, ...]:
    """The dynamic loader's own default directories, as ``ld.so --help`` lists them (glibc >= 2.33);
    the usual multiarch and lib64 directories where it cannot say."""
    import platform

    machine = platform.machine()
    exe = ld_so or _LD_SO.get(machine)
    if exe and os.path.exists(exe):
        try:
            out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        dirs = [line.split("(", 1)[0].strip() for line in out.splitlines() if "(system search path)" in line]
        if dirs:
            return tuple(Path(d) for d in dirs)
    triplet = f"{machine}-linux-gnu"
    guesses = (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
    return tuple(Path(d) for d in guesses if os.path.isdir(d))


def _elf_kind(path: Path) -> bytes | None:
    """ELF class, data encoding and machine of a file (what ld.so checks before taking it)."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return head[4:6] + head[18:20]


@dataclass(frozen=True)
class HostLoader:
    """Where this host's ld.so finds a library by its DT_NEEDED name; every input can be given (tests),
    the real ones are the defaults."""

    cache: Path = DEFAULT_CACHE
    conf: Path = DEFAULT_CONF
    library_path: str | None = field(default_factory=lambda: os.environ.get("LD_LIBRARY_PATH"))
    system_dirs: tuple[Path, ...] | None = None  # None: the loader's own (``ld.so --help``)
    reference: Path = Path(sys.executable)  # libraries must be of this program's ELF class and machine

    @cached_property
    def _kind(self) -> bytes | None:
        return _elf_kind(self.reference.resolve())

    @cached_property
    def _cached(self) -> dict[str, list[Path]]:
        try:
            data = self.cache.read_bytes()
        except OSError:
            return {}
        entries: dict[str, list[Path]] = {}
        # an entry for a glibc-hwcaps subdirectory is a variant of the same library: the plain one first
        for soname, path, _hwcap in sorted(read_ld_cache(data), key=lambda e: e[2] != 0):
            entries.setdefault(soname, []).append(Path(path))
        return entries

    @cached_property
    def library_dirs(self) -> tuple[Path, ...]:
        return tuple(Path(d) for d in (self.library_path or "").replace(";", ":").split(":") if d)

    @cached_property
    def default_dirs(self) -> tuple[Path, ...]:
        return self.system_dirs if self.system_dirs is not None else system_search_path()

    @cached_property
    def conf_dirs(self) -> tuple[Path, ...]:
        return tuple(read_ld_conf(self.conf))

    def _fits(self, path: Path) -> bool:
        return path.is_file() and (self._kind is None or _elf_kind(path) == self._kind)

    def find(self, name: str) -> tuple[Path, str] | None:
        """(path, how) of the library ld.so loads for DT_NEEDED ``name``: LD_LIBRARY_PATH, then the
        cache, then the system search path by file name; None when it finds none."""
        for d in self.library_dirs:
            if self._fits(d / name):
                return d / name, "LD_LIBRARY_PATH"
        for path in self._cached.get(name, ()):
            if self._fits(path):
                return path, str(self.cache)
        for d in self.default_dirs:
            if self._fits(d / name):
                return d / name, "the system search path"
        return None

    def uncached(self, name: str) -> Path | None:
        """A file ``name`` in a directory of ld.so.conf that ld.so does not find (the cache was not
        rebuilt since it was put there): ``ldconfig`` would make it found."""
        if self.find(name) is not None:
            return None
        return next((d / name for d in self.conf_dirs if self._fits(d / name)), None)

    def describe(self) -> str:
        parts = [f"cache {self.cache}", "system search path " + ":".join(map(str, self.default_dirs))]
        if self.library_dirs:
            parts.insert(0, "LD_LIBRARY_PATH " + ":".join(map(str, self.library_dirs)))
        return "this host's loader: " + "; ".join(parts)
