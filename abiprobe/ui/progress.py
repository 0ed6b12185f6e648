"""Progress of cold work on stderr (not under -q). On a terminal: one live display for the whole process,
an overall line (wheels done of the total, the wheel being read, bytes, rate, ETA) kept current as bytes
arrive, and a line per file being downloaded. Off a terminal (CI logs): a plain line every few seconds,
what is being read, done of the total, bytes and rate, and one when the work ends."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from abiprobe import log

PLAIN_INTERVAL = 5.0  # seconds between two plain lines off a terminal
LIVE_INTERVAL = 0.1  # seconds between two refreshes of the overall line as bytes arrive


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


def _is_tty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class Display:
    """The process's one progress display: live (rich) on a terminal or a given console, plain lines on
    ``stream`` (default stderr) off one; ``clock`` and ``interval`` are the plain lines' pacing."""

    def __init__(
        self,
        console: Any = None,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        interval: float = PLAIN_INTERVAL,
    ) -> None:
        self._console, self._stream = console, stream
        self.clock, self.interval = clock, interval
        self._progress: Any = None
        self._users = 0
        self._wanted = 0
        self._received = 0
        self._works: list[WheelWork] = []
        self._files: list[_FileWork] = []
        self._lock = threading.Lock()

    # who wants progress: an Http(progress=True) while it is open, or a test's console or stream

    def want(self, delta: int) -> None:
        with self._lock:
            self._wanted += delta

    def enabled(self) -> bool:
        if self._console is not None or self._stream is not None:
            return True
        return self._wanted > 0 and not log.quiet()

    def live(self) -> bool:
        """A rich display (a terminal, or a test's console) rather than plain lines."""
        if self._console is not None:
            return True
        return self._stream is None and _is_tty(sys.stderr)

    def received(self, n: int) -> None:
        """Bytes arrived: the overall lines (and the plain line, when one is due) follow them."""
        with self._lock:
            self._received += n
            works, files = list(self._works), list(self._files)
        for work in works:
            work.tick()
        if not works:
            for file in files:
                file.tick()

    def total_received(self) -> int:
        return self._received

    def say(self, line: str) -> None:
        """One plain progress line."""
        stream = self._stream if self._stream is not None else sys.stderr
        print(f"abiprobe: {line}", file=stream, flush=True)

    def _enter(self) -> Any:
        if not self.live():
            return None
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

    def _leave(self, progress: Any) -> None:
        if progress is None:
            return
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._progress is not None:
                self._progress.stop()
                self._progress = None

    @contextmanager
    def file(self, description: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A line for one download; the callback advances it by bytes."""
        progress = self._enter()
        work = _FileWork(self, progress, description, total)
        with self._lock:
            self._files.append(work)
        try:
            yield work.advance
        finally:
            with self._lock:
                self._files.remove(work)
            if progress is not None:
                progress.remove_task(work.task)
            self._leave(progress)

    @contextmanager
    def wheels(self, total: int, what: str = "reading") -> Iterator[WheelWork]:
        """The overall line for ``total`` wheels read at once."""
        progress = self._enter()
        work = WheelWork(self, progress, total, what)
        with self._lock:
            self._works.append(work)
        try:
            yield work
        finally:
            with self._lock:
                self._works.remove(work)
            work.end()
            self._leave(progress)


class WheelWork:
    """Wheels done of the total, the wheels being read, bytes since the start, rate and ETA."""

    def __init__(self, display: Display, progress: Any, total: int, what: str) -> None:
        self._display, self._progress, self.total, self._what = display, progress, total, what
        self._started = display.clock()
        self._base = display.total_received()
        self._said = self._started  # when the last plain line was printed (the first waits an interval)
        self._refreshed = self._started
        self.done = 0
        self.reading: list[str] = []
        self._lock = threading.Lock()
        self.task = progress.add_task(f"{what} wheels", total=total, status="") if progress else None

    def line(self) -> str:
        """``reading NAME (+2 more): 3/17 wheels, 45.2 MB at 3.1 MB/s, ETA 0:40``."""
        received = self._display.total_received() - self._base
        elapsed = self._display.clock() - self._started
        status = status_line(self.done, self.total, received, elapsed, count=True)
        if not self.reading:
            return f"{self._what} wheels: {status}"
        more = f" (+{len(self.reading) - 1} more)" if len(self.reading) > 1 else ""
        return f"{self._what} {self.reading[0]}{more}: {status}"

    def _refresh(self) -> None:
        now = self._display.clock()
        if self._progress is not None:
            name = self.reading[-1] if self.reading else "wheels"
            received = self._display.total_received() - self._base
            line = status_line(self.done, self.total, received, now - self._started, count=True)
            self._progress.update(
                self.task, completed=self.done, description=f"{self._what} {name}", status=line
            )
            self._progress.refresh()
            self._refreshed = now
        elif now - self._said >= self._display.interval:
            self._said = now
            self._display.say(self.line())

    def tick(self) -> None:
        """Bytes arrived: refresh the live line (at most every LIVE_INTERVAL) or print a due plain line."""
        with self._lock:
            now = self._display.clock()
            if self._progress is None or now - self._refreshed >= LIVE_INTERVAL:
                self._refresh()

    def started(self, name: str) -> None:
        with self._lock:
            self.reading.append(name)
            self._refresh()

    def finished(self, name: str) -> None:
        with self._lock:
            self.done += 1
            if name in self.reading:
                self.reading.remove(name)
            self._refresh()

    def end(self) -> None:
        """The work is over: the live line goes; off a terminal, a last line once any was printed."""
        if self._progress is not None:
            self._progress.remove_task(self.task)
        elif self._said > self._started:
            self._display.say(self.line())


class _FileWork:
    """One download: bytes of the total, rate, ETA (a plain line only when no wheel work is shown)."""

    def __init__(self, display: Display, progress: Any, description: str, total: int | None) -> None:
        self._display, self._progress, self.description, self.total = display, progress, description, total
        self._started = self._said = display.clock()
        self.done = 0
        self.task = progress.add_task(description, total=total, status="") if progress else None

    def advance(self, n: int) -> None:
        self.done += n
        if self._progress is not None:
            line = status_line(
                self.done, self.total, self.done, self._display.clock() - self._started, count=False
            )
            self._progress.update(self.task, advance=n, status=line)

    def tick(self) -> None:
        now = self._display.clock()
        if self._progress is None and now - self._said >= self._display.interval:
            self._said = now
            line = status_line(self.done, self.total, self.done, now - self._started, count=False)
            self._display.say(f"downloading {self.description}: {line}")


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
