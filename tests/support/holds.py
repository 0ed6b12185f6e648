"""The store's test-only hold point (``abiprobe.store.primitives.HOLD_WRITE``): a writer stops half-way
through a write and blocks on a FIFO, so that a test signals or kills it exactly there."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path


def held_write(fifo: Path, proc: subprocess.Popen[str] | subprocess.Popen[bytes], timeout: float) -> Path:
    """The temporary file that ``proc``'s writer, held on ``fifo``, has half written (it stays held)."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    got = b""
    deadline = time.monotonic() + timeout
    try:
        while not got.endswith(b"\n"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no write was held"
            select.select([fd], [], [], 0.1)
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:  # the writer has the FIFO open but has not written yet
                chunk = b""
            got += chunk
            if not chunk:
                time.sleep(0.02)
    finally:
        os.close(fd)
    return Path(got.decode().strip())
