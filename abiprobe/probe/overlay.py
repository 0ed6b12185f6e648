"""An overlay that is site-packages as an install would leave it, without touching site-packages.

Every file of site-packages is linked into the overlay, in real folders of the same names, except the
files of replaced distributions and the paths new wheels write, so writing a new file never goes through
a link into site-packages. The loader takes ``$ORIGIN`` from the folder of the path an object was opened
by (a linked file keeps the overlay's folder; a linked folder was seen resolved to site-packages), so an
extension opened through the overlay finds its ``$ORIGIN/../pkg/lib`` neighbours there: the new ones.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path


def relative_files(paths: Iterable[str]) -> set[str]:
    """The paths inside the folder they are relative to, normalized and ``/``-separated."""
    out: set[str] = set()
    for p in paths:
        parts = Path(os.path.normpath(p)).parts
        if parts and parts[0] != "..":
            out.add("/".join(parts))
    return out


def link_site(site: Path, dest: Path, gone: set[str], rel: str = "") -> None:
    """Mirror ``site``'s folders under ``rel`` in ``dest`` with every file linked, except the files
    in ``gone``; a folder left empty is not kept."""
    here = dest / rel if rel else dest
    here.mkdir(parents=True, exist_ok=True)
    with os.scandir(site / rel if rel else site) as entries:
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir(follow_symlinks=False):
                link_site(site, dest, gone, child)
            elif child not in gone:
                os.symlink(entry.path, dest / child)
    if rel and not any(here.iterdir()):
        here.rmdir()


def move_into(staged: Path, dest: Path, written: Iterable[str]) -> None:
    """Move unpacked wheel files from ``staged`` to the same paths under ``dest``."""
    for rel in written:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        shutil.move(str(staged / rel), target)
