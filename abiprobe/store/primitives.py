"""Low-level pieces of the cache: host keys, deterministic encodings, atomic files, the lock.

Nothing here knows what an entry means; ``abiprobe.store.entries`` gives bytes their meaning.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import fnmatch
import gzip
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from abiprobe.errors import CacheError
from abiprobe.net.urls import strip_credentials
from abiprobe.ui import interrupt

TEMP_PREFIX = ".tmp-"
TEMP_SUFFIX = ".part"
GZIP_LEVEL = 6


def host_key(where: str) -> str:
    """``host[:port]`` of a URL or a bare host name, credentials removed, lower-cased: the key of the
    per-host notes (the one normaliser of hosts)."""
    netloc = urlsplit(strip_credentials(where)).netloc if "://" in where else where.rpartition("@")[2]
    return netloc.strip().lower()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_sha256_hex(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


_SCALARS: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def plain(value: Any) -> Any:
    """``dataclasses.asdict`` without its deep copies (several times faster on 100k-symbol facts)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    names = _FIELD_NAMES.get(kind)
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(value))
        return plain(value)
    return value


def canonical_json(value: Any) -> bytes:
    """The one byte spelling of a JSON value that digests are taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def pretty_json(value: Any) -> bytes:
    """Sorted, indented JSON with a final newline: small, stable git diffs."""
    return (json.dumps(value, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def gzip_bytes(data: bytes) -> bytes:
    """Gzip with mtime 0 and no file name, so equal input gives equal files on every machine."""
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def is_temp_name(name: str) -> bool:
    return name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX)


def temp_file_is_abandoned(path: Path, now: float, max_age_s: float = 3600.0) -> bool:
    """A temp file whose writer on this host has died, or one older than any write could take."""
    try:
        age = now - path.stat().st_mtime
    except OSError:
        return False
    if age > max_age_s:
        return True
    pid_text = path.name[len(TEMP_PREFIX) :].partition("-")[0]
    if not pid_text.isdigit():
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def write_text_atomic(path: Path, text: str) -> None:
    """``atomic_write`` of UTF-8 text: every file abiprobe writes for a user goes through here."""
    atomic_write(path, text.encode("utf-8"))


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never a part.
    ``durable``: on disk (file and directory synced) before this returns; without, for a note whose loss
    in a crash costs nothing but asking again. The temporary file goes if the run is interrupted."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = interrupt.temp_file(path.parent, f"{TEMP_PREFIX}{os.getpid()}-", TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            held = _held_write(path)
            if held is not None:
                handle.write(data[: len(data) // 2])
                handle.flush()
                _hold(held, tmp)
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        interrupt.release(tmp)
    if durable:
        _fsync_dir(path.parent)


# A test-only fault injection point: a write whose file name matches HOLD_NAME stops half-written and
# blocks on the FIFO HOLD_WRITE names, having written its temporary file's path there, so that a test
# kills a writer exactly in the middle of a write instead of hoping a timed kill lands there.
HOLD_WRITE = "ABIPROBE_TEST_HOLD_WRITE"
HOLD_NAME = "ABIPROBE_TEST_HOLD_NAME"


def _held_write(path: Path) -> str | None:
    fifo = os.environ.get(HOLD_WRITE)
    if not fifo or not fnmatch.fnmatch(path.name, os.environ.get(HOLD_NAME, "*")):
        return None
    return fifo


def _hold(fifo: str, tmp: Path) -> None:
    with open(fifo, "wb") as announce:  # blocks until the test opens its end
        announce.write(f"{tmp}\n".encode())
    with open(fifo, "rb") as wait:  # blocks until the test writes (or kills this process)
        wait.read()


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def remove_quietly(path: Path) -> int:
    """Delete ``path`` if it is there; the number of bytes freed."""
    try:
        size = path.stat().st_size
        path.unlink()
    except OSError:
        return 0
    return size


@dataclass
class _LockState:
    pid: int
    guard: threading.RLock = field(default_factory=threading.RLock)
    depth: int = 0
    fd: int | None = None


_LOCKS: dict[str, _LockState] = {}
_LOCKS_GUARD = threading.Lock()


def _state_for(lock_path: Path) -> _LockState:
    key = str(lock_path.absolute())
    with _LOCKS_GUARD:
        state = _LOCKS.get(key)
        if state is None or state.pid != os.getpid():
            state = _LOCKS[key] = _LockState(pid=os.getpid())
        return state


@contextlib.contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock_path``, shared by every thread and ``Cache`` of this process.

    Reentrant: nested holders in one thread pass straight through; other threads wait on an RLock
    before the flock, because two descriptors of one process would otherwise deadlock each other.
    """
    state = _state_for(lock_path)
    with state.guard:
        if state.depth == 0:
            try:
                lock_path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                reason = exc.strerror or str(exc)
                raise CacheError(f"cannot lock the cache at {lock_path.parent}: {reason}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
            state.fd = fd
        state.depth += 1
        try:
            yield
        finally:
            state.depth -= 1
            if state.depth == 0 and state.fd is not None:
                fd, state.fd = state.fd, None
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
