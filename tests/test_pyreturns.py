"""Following the package's own functions (abiprobe.binary.pyreturns) stays bounded: recursive and
deeply nested calls are read without recursing past what is followed, and a module that loads nothing
follows no call."""

from __future__ import annotations

import inspect
import sys

from abiprobe.binary.pysource import scan_sources
from abiprobe.model.facts import all_events

RECURSIVE = b"""import ctypes
import torch


def ping(n):
    return pong(n) if torch.version.cuda else ping(n)


def pong(n):
    return ping(n)


def deep(x):
    return %s


ctypes.CDLL(ping(1))
ctypes.CDLL(deep(torch.version.cuda))
"""


def test_recursive_and_deeply_nested_calls_are_read_without_recursing() -> None:
    # GIVEN a loader whose path functions call each other in a cycle, and one nested 50 calls deep, read
    # under a stack 250 frames above this test's (the nesting passes that depth, as 150 calls pass the
    # default limit; each level a call caught below costs more, so the smaller case keeps the test short)
    source = RECURSIVE % ("deep(" * 50 + "x" + ")" * 50).encode()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 250)
    try:
        (module,) = scan_sources({"rec/__init__.py": source})
    finally:
        sys.setrecursionlimit(limit)
    # THEN the module is read (not only for its imports), its loads kept with their expressions
    assert module.scanned
    loads = [e for e in all_events(module.events) if e.kind == "load"]
    assert [e.expr.split("\n")[0] for e in loads] == ["ping(1)", "deep(torch.version.cuda)"]
