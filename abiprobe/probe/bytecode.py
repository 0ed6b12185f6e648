"""Bytecode kept between probes of the same layer, so torch's ~2,000 modules are compiled once, not per run.

Probe interpreters run with ``-X pycache_prefix=<layer>/pyc``: Python reads and writes ``.pyc`` files in
that separate tree instead of ``__pycache__`` directories, so nothing is ever written into an installed
layer. A fork server's children (which import a set's own packages on top of the shared layer) run with
writing off; the server itself and single-set processes write.

After the layer ran, the ``.pyc`` files of the layer's own site-packages and of paths outside the probe's
temp root (the interpreter's standard library) are saved under ``<local state>/bytecode/<layer key>``;
files compiled from a set's overlay are never saved. The next probe of the same layer links them in
before any interpreter starts. A ``.pyc`` records its source's mtime and size, and Python recompiles on
any mismatch, so a stale or foreign file costs time, never a wrong import.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

from abiprobe.store.localstate import local_state_dir

KEEP_LAYERS = 8
_SITE = "site"  # saved tree: site/<path under the layer's site-packages>
_ABS = "abs"  # saved tree: abs/<absolute path without the leading slash>


def layer_key(python_label: str, interpreter: Path, wheel_shas: Sequence[str]) -> str:
    text = "\n".join([python_label, str(interpreter), *sorted(wheel_shas)])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class BytecodeStore:
    """Saved ``.pyc`` trees, one per layer key, the least recently used dropped beyond ``KEEP_LAYERS``.

    Files are hard-linked in both directions (copied where links fail): Python replaces a ``.pyc``
    atomically when it recompiles, so a linked file is never changed under the store."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or local_state_dir() / "bytecode"

    def restore(self, key: str, prefix: Path, site: Path) -> dict[Path, int]:
        """Link the saved tree of ``key`` into the pycache ``prefix`` of a layer whose site-packages is
        ``site``; returns each placed file's inode (empty on a miss), for :meth:`save`."""
        saved = self.root / key
        placed: dict[Path, int] = {}
        if not saved.is_dir():
            return placed
        for base, dest in ((saved / _SITE, mirror(prefix, site)), (saved / _ABS, prefix)):
            for path in _pyc_files(base):
                target = dest / path.relative_to(base)
                with contextlib.suppress(OSError):
                    _place(path, target)
                    placed[target] = target.stat().st_ino
        with contextlib.suppress(OSError):
            os.utime(saved)
        return placed

    def save(self, key: str, prefix: Path, site: Path, temp_root: Path, restored: dict[Path, int]) -> int:
        """Add to the store what the layer's interpreters compiled anew (files not restored, or replaced
        since): bytecode of the layer's site-packages and of paths outside ``temp_root``, never of a set's
        overlay. Returns the number of files added."""
        site_tree = mirror(prefix, site)
        temp_tree = mirror(prefix, temp_root)
        saved = self.root / key
        added = 0
        for path in _pyc_files(prefix):
            try:
                if restored.get(path) == path.stat().st_ino:
                    continue
                if _is_within(path, site_tree):
                    dest = saved / _SITE / path.relative_to(site_tree)
                elif not _is_within(path, temp_tree):
                    dest = saved / _ABS / path.relative_to(prefix)
                else:
                    continue
                _place(path, dest)
                added += 1
            except OSError:
                continue
        if added:
            self._prune()
        return added

    def _prune(self) -> None:
        try:
            layers = [p for p in self.root.iterdir() if p.is_dir()]
            layers.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:
            return
        for old in layers[KEEP_LAYERS:]:
            shutil.rmtree(old, ignore_errors=True)


def _place(src: Path, dest: Path) -> None:
    """``dest`` becomes ``src``'s content atomically: a hard link, or a copy across file systems."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    temp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        os.link(src, temp)
    except OSError:
        shutil.copy2(src, temp)
    os.replace(temp, dest)


def mirror(prefix: Path, source_dir: Path) -> Path:
    """Where Python puts the bytecode of ``source_dir``'s modules under a pycache prefix."""
    return prefix / str(source_dir.absolute()).lstrip(os.sep)


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _pyc_files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return [p for p in root.rglob("*.pyc") if p.is_file() and not p.is_symlink()]
