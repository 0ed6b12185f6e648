"""Modules are read whole while other threads read theirs and the collector runs Python code.

CPython 3.11's syntax-tree builder keeps its depth counter in interpreter-wide state: a parse on one
thread that starts while another thread's tree is being built ends in ``SystemError: AST constructor
recursion depth mismatch``. Here the collector's callback gives up the interpreter lock in the middle
of the main thread's tree, and a second thread parses meanwhile; the scanner must still read every
module (a load it would otherwise miss), and never raise."""

from __future__ import annotations

import gc
import threading
import time

from abiprobe.binary.pysource import scan_module

_BIG = "\n".join(
    f"def f{i}(a, b):\n    return [a + b * {i} for _ in range(3)] if a else {{'k': (b, a)}}"
    for i in range(1500)
)
_SOURCE = (_BIG + "\nimport ctypes\nctypes.CDLL('libdemo_rt.so.3')\n").encode()


def test_scanned_while_another_thread_parses() -> None:
    stop, errors = threading.Event(), []

    def yield_lock(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and threading.current_thread() is threading.main_thread():
            time.sleep(0.0005)  # another thread runs now, inside the main thread's tree building

    def other() -> None:
        while not stop.is_set():
            try:
                scan_module("pkg/small.py", b"import os\nx = [1, (2, 3)]\n")
            except SystemError as exc:
                errors.append(exc)

    gc.callbacks.append(yield_lock)
    thread = threading.Thread(target=other)
    thread.start()
    try:
        scanned = [scan_module("pkg/big.py", _SOURCE) for _ in range(3)]
    finally:
        stop.set()
        thread.join()
        gc.callbacks.remove(yield_lock)
    assert errors == []
    for module in scanned:
        assert module is not None
        assert ("load", "libdemo_rt.so.3") in [(e.kind, e.target) for e in module.events]
