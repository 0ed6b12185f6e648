"""Subprocesses in their own process groups, all killable at once on Ctrl-C or timeout."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from abiprobe.errors import AbiprobeError


class ProbeCancelled(AbiprobeError):
    """The probe run was interrupted; no new process may start."""

    exit_code = 130


@dataclass(frozen=True)
class Finished:
    returncode: int | None  # None when killed for the timeout
    timed_out: bool
    stdout: str
    stderr: str


class ProcessRegistry:
    """Tracks live children so an interrupt can kill every process group before the temp root goes."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # cancel() may run in a signal handler while this thread holds it
        self._live: set[subprocess.Popen[bytes]] = set()
        self.cancelled = threading.Event()

    def run(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        timeout: float,
        cwd: Path | None = None,
        log_dir: Path | None = None,
    ) -> Finished:
        """Run ``argv`` in a new session; on timeout kill its whole group. Output goes to files if given."""
        if self.cancelled.is_set():
            raise ProbeCancelled("probe interrupted")
        out_path = err_path = None
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            out_path, err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
        with contextlib.ExitStack() as stack:
            out: int | IO[bytes] = subprocess.PIPE
            err: int | IO[bytes] = subprocess.PIPE
            if out_path is not None and err_path is not None:
                out = stack.enter_context(open(out_path, "wb"))
                err = stack.enter_context(open(err_path, "wb"))
            try:
                proc = subprocess.Popen(
                    list(argv),
                    env=env,
                    cwd=cwd,
                    stdout=out,
                    stderr=err,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            except OSError as exc:
                raise AbiprobeError(f"cannot run {argv[0]}: {exc}") from exc
            with self._lock:
                self._live.add(proc)
                started_after_cancel = self.cancelled.is_set()
            if started_after_cancel:  # cancel() ran between the check above and Popen: it missed this one
                _kill_group(proc)
            # a timer kills the group at the deadline, so the wait below blocks in waitpid (or select)
            # and returns the moment the child exits; a wait with a timeout polls with growing sleeps
            expired = threading.Event()

            def expire() -> None:
                expired.set()
                _kill_group(proc)

            timer = threading.Timer(timeout, expire)
            timer.daemon = True
            timer.start()
            try:
                stdout_b, stderr_b = proc.communicate()
            finally:
                timer.cancel()
                timed_out = expired.is_set()
                with self._lock:
                    self._live.discard(proc)
                _kill_group(proc)
        if self.cancelled.is_set():
            raise ProbeCancelled("probe interrupted")
        stdout = _read(out_path) if out_path else (stdout_b or b"").decode("utf-8", "replace")
        stderr = _read(err_path) if err_path else (stderr_b or b"").decode("utf-8", "replace")
        return Finished(None if timed_out else proc.returncode, timed_out, stdout, stderr)

    def cancel(self) -> None:
        """Refuse new processes and kill the groups of the live ones."""
        with self._lock:
            self.cancelled.set()
            live = list(self._live)
        for proc in live:
            _kill_group(proc)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _read(path: Path | None, limit: int = 20000) -> str:
    if path is None or not path.exists():
        return ""
    data = path.read_bytes()
    return data[-limit:].decode("utf-8", "replace")
