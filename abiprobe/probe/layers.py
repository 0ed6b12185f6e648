"""Installed layers kept between probes (``--keep-layers``): a lone probe costs little more than its import.

A layer (a venv holding a set's shared wheels) is keyed by the interpreter it was made with (its path,
size and mtime), the installer, and the sha256 of every wheel in it; nothing else decides what it holds.
It is built under a temporary name inside the store and renamed into place only once complete, with a
manifest holding its fingerprint (entries, and the sums of their sizes, mtimes and inode numbers). A kept
layer is checked against it while its sets import (a stat of every entry, ~0.1 s for torch's 16,000):
a layer that a probed package wrote into, or that lost or gained a file, fails, its results are
dropped, and it is removed and built afresh, so a kept layer never changes what an import sees. Its
bytecode lives beside it (``pyc/``, the interpreters' pycache prefix), never inside the installed files.

The store is bounded in bytes (installed size); the least recently used layers beyond the bound are
removed after each probe run, except layers in use: a probe holds a shared lock on the layer's lock file
while it runs, and removal takes the exclusive one without waiting.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from abiprobe.store.localstate import local_state_dir
from abiprobe.ui import interrupt

DEFAULT_MAX_BYTES = 20 * 2**30
_MANIFEST = "manifest.json"
_VENV = "venv"
_PYC = "pyc"


def kept_layer_key(installer: str, interpreter: Path, wheel_shas: Sequence[str]) -> str:
    """The identity of a layer: interpreter (resolved path, size, mtime), installer, wheel sha256s."""
    real = os.path.realpath(interpreter)
    try:
        st = os.stat(real)
        ident = f"{real}\n{st.st_size}\n{st.st_mtime_ns}"
    except OSError:
        ident = real
    text = "\n".join([ident, installer, *sorted(wheel_shas)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def fingerprint(root: Path) -> tuple[int, int, int, int]:
    """(entries, then the sums of their sizes, mtimes in ns and inode numbers) of everything under
    ``root``: a file written, replaced, added or removed, or a directory's entries changed, moves it.
    (Not the ctime: the installer hard-links files from its cache, and another install linking the
    same file changes its ctime without changing the layer.)"""
    entries = size = mtime = inode = 0
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for entry in it:
                st = entry.stat(follow_symlinks=False)
                entries += 1
                size += st.st_size
                mtime += st.st_mtime_ns
                inode += st.st_ino
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
    return entries, size, mtime, inode


@dataclass
class KeptLayer:
    """A layer of the store in use: its venv and pycache prefix; ``reused`` when it was there already,
    ``unchecked`` when it was handed out before its files were compared with its manifest."""

    key: str
    root: Path
    reused: bool
    lock: IO[bytes] | None = None
    unchecked: bool = False
    temporary: bool = False  # a copy that could not be put in place: removed once released

    def intact(self) -> bool:
        """Whether the venv's :func:`fingerprint` is the one taken when it was built."""
        try:
            doc = json.loads((self.root / _MANIFEST).read_text())
            now = list(fingerprint(self.venv))
        except (OSError, ValueError):
            return False
        return isinstance(doc, dict) and doc.get("fingerprint") == now

    @property
    def venv(self) -> Path:
        return self.root / _VENV

    @property
    def pycache(self) -> Path:
        return self.root / _PYC

    def release(self) -> None:
        if self.lock is not None:
            self.lock.close()  # closing drops the shared lock
            self.lock = None
        if self.temporary:
            shutil.rmtree(self.root, ignore_errors=True)


class LayerStore:
    """Kept layers under ``root`` (default ``<local state>/layers``), at most ``max_bytes`` installed."""

    def __init__(self, root: Path | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root or local_state_dir() / "layers"
        self.max_bytes = max_bytes

    def _lock(self, key: str, exclusive: bool, wait: bool) -> IO[bytes] | None:
        self.root.mkdir(parents=True, exist_ok=True)
        fh = open(self.root / f"{key}.lock", "ab")  # noqa: SIM115 - held open while the layer is in use
        flags = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | (0 if wait else fcntl.LOCK_NB)
        try:
            fcntl.flock(fh, flags)
        except OSError:
            fh.close()
            return None
        return fh

    def acquire(self, key: str, verify: bool = True) -> KeptLayer | None:
        """The kept layer of ``key``, locked for use; None on a miss. With ``verify`` its files are
        compared with its manifest first (a layer that fails is removed); without, the caller must
        check :meth:`KeptLayer.intact` before trusting what ran in it."""
        path = self.root / key
        if not (path / _MANIFEST).is_file():
            return None
        lock = self._lock(key, exclusive=False, wait=True)
        if lock is None:
            return None
        layer = KeptLayer(key, path, True, lock, unchecked=not verify)
        if not (path / _MANIFEST).is_file() or (verify and not layer.intact()):
            layer.release()
            self.discard(key)
            return None
        with contextlib.suppress(OSError):
            os.utime(path / _MANIFEST)  # last use, for the least-recently-used bound
        return layer

    def building(self, key: str) -> Path:
        """A fresh directory to build a layer of ``key`` in (its venv goes to ``<dir>/venv``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        return interrupt.new_dir(self.root / f".build-{key}-{os.getpid()}-{time.monotonic_ns()}")

    def adopt(self, key: str, built: Path) -> KeptLayer:
        """Move a completely built layer into place (another process's copy wins if it came first)."""
        fp = fingerprint(built / _VENV)
        (built / _MANIFEST).write_text(json.dumps({"fingerprint": list(fp), "bytes": fp[1]}))
        dest = self.root / key
        lock = self._lock(key, exclusive=False, wait=True)
        try:
            os.rename(built, dest)
            interrupt.release(built)
        except OSError:  # a layer of this key is there (another run's, or one in use that failed its
            if lock is not None:  # check and could not be removed): this copy serves this run only
                lock.close()
            return KeptLayer(key, built, False, None, temporary=True)
        return KeptLayer(key, dest, False, lock)

    def discard(self, key: str) -> bool:
        """Remove a kept layer unless a probe is using it; True when it is gone."""
        lock = self._lock(key, exclusive=True, wait=False)
        if lock is None:
            return False
        try:
            path = self.root / key
            if path.exists():
                trash = self.root / f".trash-{key}-{os.getpid()}-{time.monotonic_ns()}"
                os.rename(path, trash)
                shutil.rmtree(trash, ignore_errors=True)
            return True  # the lock file stays: a waiting probe holds it open, and rechecks the layer
        finally:
            lock.close()

    def layers(self) -> list[tuple[str, int, float]]:
        """(key, installed bytes, last use) of every kept layer, most recently used first."""
        out: list[tuple[str, int, float]] = []
        if not self.root.is_dir():
            return out
        for p in self.root.iterdir():
            if p.name.startswith(".") or not p.is_dir():
                continue
            try:
                doc = json.loads((p / _MANIFEST).read_text())
                out.append((p.name, int(doc.get("bytes", 0)), (p / _MANIFEST).stat().st_mtime))
            except (OSError, ValueError, TypeError):
                continue
        out.sort(key=lambda t: t[2], reverse=True)
        return out

    def prune(self) -> list[str]:
        """Remove the least recently used layers beyond ``max_bytes`` (never one in use); left-over
        build and trash directories of dead processes go too. Returns the keys removed."""
        removed: list[str] = []
        total = 0
        for key, size, _ in self.layers():
            total += size
            if total > self.max_bytes and self.discard(key):
                removed.append(key)
                total -= size
        for p in self.root.glob(".*-*"):
            if p.name.startswith((".build-", ".trash-")) and not _pid_alive(p.name):
                shutil.rmtree(p, ignore_errors=True)
        return removed


def _pid_alive(name: str) -> bool:
    """Whether the process that named ``.build-<key>-<pid>-<n>`` still runs."""
    try:
        pid = int(name.split("-")[2])
    except (IndexError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def parse_size(text: str) -> int:
    """``20G``, ``500M``, ``1.5T`` or a byte count."""
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    factor = units.get(t[-1:], 1)
    number = t[:-1] if t[-1:] in units else t
    return int(float(number) * factor)
