"""Stopping on SIGINT or SIGTERM in any phase, in one place.

The first signal kills every child process (each in its own process group, so the group goes too),
removes the temporary files and directories registered here, says "abiprobe: interrupted" once and
exits 130 (143 for SIGTERM) at once: no thread blocked in a read or a pool shutdown is waited for. A
second signal kills at once (the default action is back in place while the first one is handled).

Temporary paths are registered *before* they are created, under the lock the handler holds while it
removes them, so a path is either removed or never made, whatever thread makes it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
MESSAGE = b"abiprobe: interrupted\n"

_lock = threading.RLock()
_temps: dict[int, Path] = {}
_callbacks: dict[int, Callable[[], None]] = {}
_keys = itertools.count()


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGINT and SIGTERM stop the process as this module says, for the duration; in any thread but the
    main one, or for a signal ignored when the process started (a background job's SIGINT), nothing is
    changed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, object] = {}
    for signum in EXIT_CODES:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        previous[signum] = current
        signal.signal(signum, _on_signal)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def _on_signal(signum: int, frame: types.FrameType | None) -> None:
    for other in EXIT_CODES:
        with contextlib.suppress(ValueError, OSError):
            signal.signal(other, signal.SIG_DFL)
    stop(EXIT_CODES.get(signal.Signals(signum), 128 + signum))


def stop(code: int) -> None:
    """Kill the children, remove the registered temporary paths, say so and exit with ``code``."""
    with _lock:  # held to the exit: no thread registers (and so creates) a temporary path after this
        for callback in list(_callbacks.values()):
            with contextlib.suppress(Exception):
                callback()
        kill_descendants()
        for path in list(_temps.values()):
            remove(path)
        kill_descendants()  # any started while the paths went
        with contextlib.suppress(OSError):
            os.write(2, MESSAGE)
        os._exit(code)


def remove(path: Path) -> None:
    """Remove a file or a whole tree, quietly."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _register(path: Path) -> int:
    key = next(_keys)
    _temps[key] = path
    return key


def temp_file(directory: Path, prefix: str, suffix: str) -> tuple[int, Path]:
    """A new empty file (mode 0600) in ``directory`` named ``prefix<random>suffix``, removed on a stop
    until :func:`release`\\ d; its descriptor and path."""

    def make(path: Path) -> int:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)

    return _claimed(lambda: directory / f"{prefix}{os.urandom(6).hex()}{suffix}", make)


def temp_dir(parent: Path, prefix: str) -> Path:
    """A new directory (mode 0700) under ``parent`` named ``prefix<random>``, removed whole on a stop
    until :func:`release`\\ d."""
    return _claimed(lambda: parent / f"{prefix}{os.urandom(6).hex()}", lambda path: os.mkdir(path, 0o700))[1]


def _claimed(name: Callable[[], Path], make: Callable[[Path], T]) -> tuple[T, Path]:
    """A fresh random path, registered before it is made (under the lock a stop holds), so it is either
    removed on a stop or never made; another name when one is taken."""
    while True:
        with _lock:
            path = name()
            key = _register(path)
            try:
                made = make(path)
            except FileExistsError:
                _temps.pop(key, None)
                continue
            except BaseException:
                _temps.pop(key, None)
                raise
            return made, path


def new_dir(path: Path) -> Path:
    """``path`` made (it must not exist), removed whole on a stop until :func:`release`\\ d."""
    with _lock:
        key = _register(path)
        try:
            path.mkdir()
        except BaseException:
            _temps.pop(key, None)
            raise
        return path


@contextlib.contextmanager
def removed_on_stop(path: Path) -> Iterator[Path]:
    """``path`` (made inside the block, or already there) is removed on a stop while the block runs."""
    with _lock:
        key = _register(path)
    try:
        yield path
    finally:
        with _lock:
            _temps.pop(key, None)


def release(path: Path) -> None:
    """``path`` is no longer removed on a stop (renamed into place, or removed by its maker)."""
    with _lock:
        for key in [k for k, p in _temps.items() if p == path]:
            del _temps[key]


@contextlib.contextmanager
def on_stop(callback: Callable[[], None]) -> Iterator[None]:
    """Run ``callback`` first on a stop, while the block runs (refuse new work, flush a child's state)."""
    with _lock:
        key = next(_keys)
        _callbacks[key] = callback
    try:
        yield
    finally:
        with _lock:
            _callbacks.pop(key, None)


def kill_descendants() -> None:
    """SIGKILL every process descended from this one, and the process group of each that leads its own
    (an installer's own children go with it, even once re-parented)."""
    me, own_group = os.getpid(), os.getpgrp()
    parents: dict[int, list[tuple[int, int]]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            stat = _stat(int(entry.name))
            if stat is not None:
                parents.setdefault(stat[0], []).append((int(entry.name), stat[1]))
    todo, seen = [me], set()
    while todo:
        for pid, group in parents.get(todo.pop(), []):
            if pid in seen:
                continue
            seen.add(pid)
            todo.append(pid)
            if group != own_group:
                with contextlib.suppress(OSError):
                    os.killpg(group, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, process group) from ``/proc/PID/stat``; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    try:
        return int(fields[1]), int(fields[2])
    except (IndexError, ValueError):
        return None
