"""Parsing Python source for the scanners, safely: one parse at a time, and no exception for text that
is not Python (or is nested past what the parser takes).

CPython 3.11 keeps the depth counter of its syntax-tree builder in interpreter-wide state, so a parse
that runs while another is building its tree (another thread's, or one a collector callback starts)
can end in ``SystemError: AST constructor recursion depth mismatch`` although the text is fine. Parses
are therefore serialised, and a parse that still meets that error is tried once more."""

from __future__ import annotations

import ast
import threading
from typing import Literal

_LOCK = threading.RLock()
NOT_PARSED = (SyntaxError, ValueError, RecursionError, MemoryError)


def parse(source: str | bytes, mode: Literal["exec", "eval"] = "exec") -> ast.AST | None:
    """The syntax tree of ``source`` (a module, or with ``mode="eval"`` an expression); None when it
    is not Python, has a null byte, or nests deeper than the parser goes."""
    for attempt in (1, 2):
        try:
            with _LOCK:
                return ast.parse(source, mode=mode)
        except NOT_PARSED:
            return None
        except SystemError:  # the builder's depth counter disturbed (see above): the text may be fine
            if attempt == 2:
                return None
    return None


def parse_module(source: str | bytes) -> ast.Module | None:
    """A module's syntax tree, or None (see :func:`parse`)."""
    tree = parse(source)
    return tree if isinstance(tree, ast.Module) else None


def parse_expr(source: str) -> ast.expr | None:
    """An expression's syntax tree, or None (see :func:`parse`)."""
    tree = parse(source, "eval")
    return tree.body if isinstance(tree, ast.Expression) else None
