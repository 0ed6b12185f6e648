"""State that belongs to this machine only, never to the committable ``wheel_index_cache/``.

- the sha256 of local wheel files, remembered by the file's identity (device, inode, size, mtime and
  ctime in nanoseconds), so a multi-GB set of wheels is hashed once and not on every probe;
- the probe's bytecode cache (``abiprobe.probe.bytecode``).

It lives in ``$ABIPROBE_LOCAL_DIR``, else ``$XDG_CACHE_HOME/abiprobe-local`` (``~/.cache/abiprobe-local``).
Everything here can be deleted at any time; a damaged or stale record is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from abiprobe.binary.wheel import hash_file
from abiprobe.store.primitives import atomic_write

LOCAL_DIR_ENV = "ABIPROBE_LOCAL_DIR"


def local_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    explicit = env.get(LOCAL_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "abiprobe-local"


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def local_sha256(path: Path, root: Path | None = None) -> str:
    """sha256 of a local file, hashed only when the file is new or changed since it was last hashed.

    Raises OSError when the file cannot be read."""
    path = path.absolute()
    records = (root or local_state_dir()) / "sha256"
    record = records / f"{hashlib.sha256(str(path).encode()).hexdigest()}.json"
    before = path.stat()
    try:
        doc = json.loads(record.read_text())
        if doc.get("path") == str(path) and doc.get("identity") == _identity(before):
            sha = doc.get("sha256")
            if isinstance(sha, str) and len(sha) == 64:
                return sha
    except (OSError, ValueError, AttributeError):
        pass
    sha = hash_file(path)
    after = path.stat()
    if _identity(after) == _identity(before):  # not rewritten while it was being hashed
        try:
            doc = {"path": str(path), "identity": _identity(after), "sha256": sha}
            atomic_write(record, json.dumps(doc).encode())
        except OSError:
            pass  # a read-only home only costs the next run a re-hash
    return sha
