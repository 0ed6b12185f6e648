"""What a module computes before a test that decides whether it loads native code, kept as a small
program for the planner: the module's earlier top-level statements the test's names depend on (through
the package's own functions too), a value known when the facts are read (a file of the wheel, a
constant list) written as its literal. abiprobe.analyze.units runs it with
:class:`abiprobe.binary.pyinterp.Interpreter` and the values the set and the target fix
(``torch.__version__``, the set's distribution versions), so a version guard such as torchao's (skip
loading its libraries unless the torch it was built against is the one installed) is followed."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any

from abiprobe.binary.pyinterp import bound_names, literal

MAX_SETUP = 12_000  # characters of program kept per test; a longer one is not kept (the test is opaque)
TEST_NAME = "__abiprobe_test__"


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def setup_program(test: ast.expr, earlier: Sequence[ast.stmt], known: Mapping[str, Any]) -> str:
    """The program that computes ``test`` from the module's ``earlier`` statements (``""`` when the test
    reads none of the names they bind, or the program would be too long). ``known``: values computed at
    facts time; the last statement binding such a name is written as its literal."""
    needed = _loaded(test)
    binders = [bound_names(s) for s in earlier]
    if not needed & set().union(*binders):
        return ""
    chosen: list[int] = []
    for i in range(len(earlier) - 1, -1, -1):
        if binders[i] & needed:
            chosen.append(i)
            needed |= _loaded(earlier[i])
    chosen.reverse()
    last: dict[str, int] = {}
    for i in chosen:
        for name in binders[i]:
            last[name] = i
    lines: list[str] = []
    for i in chosen:
        stmt = earlier[i]
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and len(binders[i]) == 1:
            (name,) = binders[i]
            value = literal(known.get(name), 2048) if name in known and last.get(name) == i else None
            if value is not None:
                lines.append(f"{name} = {value}")
                continue
        lines.append(ast.unparse(stmt))
    lines.append(f"{TEST_NAME} = bool({ast.unparse(test)})")
    program = "\n".join(lines)
    return program if len(program) <= MAX_SETUP else ""


__all__ = ["MAX_SETUP", "TEST_NAME", "setup_program"]
