"""Progress of cold work on stderr (a terminal only, not under -q): one live display for the whole
process, holding an overall line (wheels done of the total, the wheel being read, bytes, rate, ETA) and a
line per file being downloaded (bytes of the total, rate, ETA)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from abiprobe import log


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def _eta(done: float, total: float | None, elapsed: float) -> str:
    if not total or done <= 0 or elapsed <= 0 or done >= total:
        return "ETA -:--"
    left = elapsed * (total - done) / done
    return f"ETA {int(left // 60)}:{int(left % 60):02d}"


def status_line(done: float, total: float | None, received: int, elapsed: float, *, count: bool) -> str:
    """``3/17 wheels, 45.2 MB at 3.1 MB/s, ETA 0:40`` (count) or ``1.2 MB of 5.3 MB at ..., ETA ...``."""
    rate = f"{_size(received / elapsed)}/s" if elapsed > 0 else "-"
    amount = (
        f"{int(done)}/{int(total or 0)} wheels, {_size(received)}"
        if count
        else (f"{_size(done)} of {_size(total)}" if total else _size(done))
    )
    return f"{amount} at {rate}, {_eta(done, total, elapsed)}"


class Display:
    """The process's one rich progress display; started by the first task, stopped after the last."""

    def __init__(self, console: Any = None) -> None:
        self._console = console
        self._progress: Any = None
        self._users = 0
        self._wanted = 0
        self._received = 0
        self._lock = threading.Lock()

    # who wants progress: an Http(progress=True) while it is open, or a test's console

    def want(self, delta: int) -> None:
        with self._lock:
            self._wanted += delta

    def enabled(self) -> bool:
        if self._console is not None:
            return True
        return self._wanted > 0 and not log.quiet() and sys.stderr.isatty()

    def received(self, n: int) -> None:
        with self._lock:
            self._received += n

    def _enter(self) -> Any:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        with self._lock:
            if self._users == 0:
                self._progress = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(bar_width=20),
                    TextColumn("{task.fields[status]}"),
                    console=self._console or Console(stderr=True),
                    transient=self._console is None,
                )
                self._progress.start()
            self._users += 1
            return self._progress

    def _leave(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._progress is not None:
                self._progress.stop()
                self._progress = None

    @contextmanager
    def file(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A line for one download; the callback advances it by bytes."""
        progress = self._enter()
        started, state = time.monotonic(), {"done": 0}
        task = progress.add_task(description, total=total, status="")

        def advance(n: int) -> None:
            state["done"] += n
            line = status_line(state["done"], total, state["done"], time.monotonic() - started, count=False)
            progress.update(task, advance=n, status=line)

        try:
            yield advance
        finally:
            progress.remove_task(task)
            self._leave()

    @contextmanager
    def wheels(self, total: int, what: str = "reading") -> Iterator[WheelWork]:
        """The overall line for ``total`` wheels read at once."""
        progress = self._enter()
        work = WheelWork(self, progress, total, what)
        try:
            yield work
        finally:
            progress.remove_task(work.task)
            self._leave()


class WheelWork:
    """Wheels done of the total, the wheel being read, bytes since the start, rate and ETA."""

    def __init__(self, display: Display, progress: Any, total: int, what: str) -> None:
        self._display, self._progress, self.total, self._what = display, progress, total, what
        self._started, self._base = time.monotonic(), display._received
        self.done = 0
        self._lock = threading.Lock()
        self.task = progress.add_task(f"{what} wheels", total=total, status="")

    def _refresh(self, name: str) -> None:
        received = self._display._received - self._base
        line = status_line(self.done, self.total, received, time.monotonic() - self._started, count=True)
        self._progress.update(self.task, completed=self.done, description=f"{self._what} {name}", status=line)
        self._progress.refresh()

    def started(self, name: str) -> None:
        with self._lock:
            self._refresh(name)

    def finished(self, name: str) -> None:
        with self._lock:
            self.done += 1
            self._refresh(name)


class _NoWork:
    done = 0

    def started(self, name: str) -> None:
        pass

    def finished(self, name: str) -> None:
        pass


DISPLAY = Display()


@contextmanager
def wheel_work(total: int, what: str = "reading") -> Iterator[WheelWork | _NoWork]:
    """The overall progress of reading ``total`` wheels, when progress is shown at all."""
    if not DISPLAY.enabled():
        yield _NoWork()
        return
    with DISPLAY.wheels(total, what) as work:
        yield work
