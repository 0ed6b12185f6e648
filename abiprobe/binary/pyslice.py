"""What a module computes before a test that decides whether it loads native code, kept as a small program for
the planner (and the same for a load's path it could not follow, :func:`path_program`): the module's earlier
top-level statements the test's names depend on (through the package's own functions too), a value known
when the facts are read (a file of the wheel, a constant list) written as its literal.
abiprobe.analyze.units runs it with :class:`abiprobe.binary.pyinterp.Interpreter` and the values the set and
the target fix (``torch.__version__``, the set's distribution versions), so a version guard such as
torchao's (skip loading its libraries unless the torch it was built against is the one installed) is
followed."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

from abiprobe.binary.pyinterp import LINE_HOOK, bound_names, changed_names, literal

MAX_SETUP = 12_000  # characters of program kept per test; a longer one is not kept (the test is opaque)
MAX_CALL = 24_000  # characters of a call's program (the functions it runs, their lines marked)
TEST_NAME = "__abiprobe_test__"


def _loaded(node: ast.AST) -> set[str]:
    """The names ``node`` reads (``x += y`` reads the ``x`` it changes)."""
    changed = {id(a.target) for a in ast.walk(node) if isinstance(a, ast.AugAssign)}
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and (isinstance(n.ctx, ast.Load) or id(n) in changed)
    }


def _binds(stmt: ast.stmt) -> set[str]:
    return bound_names(stmt) | {
        n for node in ast.walk(stmt) if isinstance(node, ast.stmt) for n in changed_names(node)
    }


def setup_program(
    test: ast.expr,
    earlier: Sequence[ast.stmt],
    known: Mapping[str, Any],
    *,
    as_bool: bool = True,
    prefix: Sequence[ast.stmt] = (),
    render: Callable[[ast.stmt], str] = ast.unparse,
    limit: int = MAX_SETUP,
    tail: str | None = None,
    reads: Set[str] = frozenset(),
) -> str:
    """The program that computes ``test`` from the module's ``earlier`` statements (``""`` when the test
    reads none of the names they bind, or the program would be too long). ``known``: values computed at
    facts time; the last statement binding such a name is written as its literal. ``as_bool`` False: the
    program keeps the value itself (a load's path, :func:`path_program`). ``prefix``: statements of the
    enclosing function run after the module's (their values are never taken from ``known``). ``render``:
    how a statement taken is written; ``limit``: the longest program kept. ``tail``: statements that end
    the program instead of the test (``test`` is then ignored), reading the names ``reads``."""
    needed = _loaded(test) if tail is None else set(reads)
    module_count = len(earlier)
    earlier = [*earlier, *prefix]
    # what each statement binds or changes in place (``libs.append(x)``, ``libs += [...]``): a statement
    # changing a needed name is needed as much as the one that bound it
    binders = [_binds(s) for s in earlier]
    if not needed & set().union(*binders):
        return "" if tail is None or len(tail) > limit else tail
    # a function reads its names when called, after every statement here ran: one defined later than the
    # function that calls it is needed too, so the statements are taken until nothing more is needed
    taken: set[int] = set()
    while True:
        before = len(taken)
        for i in range(len(earlier) - 1, -1, -1):
            if i not in taken and binders[i] & needed:
                taken.add(i)
                needed |= _loaded(earlier[i])
        if len(taken) == before:
            break
    chosen = sorted(taken)
    last: dict[str, int] = {}
    for i in chosen:
        for name in binders[i]:
            last[name] = i
    lines: list[str] = []
    for i in chosen:
        stmt = earlier[i]
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and len(binders[i]) == 1 and i < module_count:
            (name,) = binders[i]
            value = literal(known.get(name), 2048) if name in known and last.get(name) == i else None
            if value is not None:
                lines.append(f"{name} = {value}")
                continue
        lines.append(render(stmt))
    if tail is not None:
        lines.append(tail)
    else:
        lines.append(
            f"{TEST_NAME} = bool({ast.unparse(test)})" if as_bool else f"{TEST_NAME} = {ast.unparse(test)}"
        )
    program = "\n".join(lines)
    return program if len(program) <= limit else ""


def call_program(call: ast.Call, earlier: Sequence[ast.stmt], known: Mapping[str, Any],
                 prefix: Sequence[ast.stmt] = ()) -> str:  # fmt: skip
    """The program that runs a call of the package's own function at import (``_load_cuda_library("cudnn")``)
    with the functions and values it reads, each statement of those functions preceded by its line in the
    module (:data:`abiprobe.binary.pyinterp.LINE_HOOK`): the planner runs it with the set's files and
    records what it loads and raises, and where (abiprobe.analyze.units). ``prefix``: the statements of the
    enclosing blocks before the call (their values are never taken from ``known``)."""
    return setup_program(
        call, earlier, known, as_bool=False, prefix=prefix, render=_with_lines, limit=MAX_CALL
    )


def statements_program(
    stmts: Sequence[ast.stmt], earlier: Sequence[ast.stmt], known: Mapping[str, Any]
) -> str:
    """The program that runs top-level statements of a module as written (a loop over the folders the
    package searches for its library, the test after it that raises when none loaded), every statement
    marked with its line as :func:`call_program` marks a function's, after the module's earlier
    statements they read; ``""`` when it would be longer than a call's program."""
    block = ast.Module(body=copy.deepcopy(list(stmts)), type_ignores=[])
    _mark(block)
    reads = set().union(*(_loaded(s) for s in stmts))
    return setup_program(
        ast.Constant(None), earlier, known, render=_with_lines, limit=MAX_CALL, tail=ast.unparse(block),
        reads=reads,
    )  # fmt: skip


def marked_module(tree: ast.Module) -> str:
    """A module's source as :func:`call_program` writes a statement: the statements of its functions
    marked with their lines (for a module a call program embeds)."""
    return "\n".join(_with_lines(s) for s in tree.body)


def _with_lines(stmt: ast.stmt) -> str:
    """A statement as written, every statement inside the functions it defines marked with its line."""
    if not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(stmt)):
        return ast.unparse(stmt)
    marked = copy.deepcopy(stmt)
    for node in ast.walk(marked):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _mark(node)
    return ast.unparse(marked)


def _mark(node: ast.AST) -> None:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(node, field, None)
        if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
            continue
        out: list[ast.stmt] = []
        for stmt in block:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and len(block) > 1:
                continue  # a docstring
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                hook = ast.Call(ast.Name(LINE_HOOK, ast.Load()), [ast.Constant(stmt.lineno)], [])
                out.append(ast.Expr(hook))
                _mark(stmt)
            out.append(stmt)
        setattr(node, field, out)
    for handler in getattr(node, "handlers", ()):
        _mark(handler)


def path_program(
    path: ast.expr,
    earlier: Sequence[ast.stmt],
    known: Mapping[str, Any],
    local: Set[str] = frozenset(),
    prefix: Sequence[ast.stmt] = (),
) -> str:
    """The program computing a load's path the scanner could not follow (the package's own search:
    ``ctypes.CDLL(_get_shared_object_file("core"))``, a function listing folders for a file by prefix),
    from the module's imports, functions and constants before it; the planner runs it with the set's
    installed files (abiprobe.analyze.units). A name the enclosing function binds itself (``local``: its
    parameters and assignments) is computed by the function's own plain statements before the load
    (``prefix``); ``""`` when it is not (a parameter, a name bound in a branch), or the path reads no
    function or value of the module."""
    reads = _loaded(path)
    if not reads & local:
        return setup_program(path, earlier, known, as_bool=False)
    taken = _own_statements(reads, prefix, local)
    if taken is None:
        return ""
    return setup_program(path, earlier, known, as_bool=False, prefix=taken)


def _own_statements(reads: set[str], prefix: Sequence[ast.stmt], local: Set[str]) -> list[ast.stmt] | None:
    """The enclosing function's statements before the load that compute the function's own names the
    path reads (``lib_path = libinfo.find_lib_path()`` before ``CDLL(lib_path[0])``): plain statements
    (assignments, ``+=``, a method call changing a list, an ``if`` of those: the program runs its test),
    each reading no name of the function not bound by one before it (a parameter, a name bound in a
    loop: the program could not know it); None when they cannot be taken so."""
    needed = reads & local
    chosen: list[int] = []
    for i in range(len(prefix) - 1, -1, -1):
        stmt = prefix[i]
        binds = _binds(stmt)
        if binds & needed:
            if not _plain(stmt):
                return None
            chosen.append(i)
            # ``x += y`` and ``x.append(y)`` read the ``x`` they change; an ``if`` binds what both branches do
            needed = (needed - _surely_bound([stmt])) | ((_loaded(stmt) | changed_names(stmt)) & local)
            if isinstance(stmt, ast.AugAssign):
                needed |= _loaded(stmt.target) | bound_names(stmt)
    if needed:  # read before anything of the function binds it: a parameter, or not bound at all
        return None
    return [prefix[i] for i in sorted(chosen)]


def _plain(stmt: ast.stmt) -> bool:
    """A statement the program may run as it stands: no loop, no ``try``, no jump out of the function."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Call)
    if isinstance(stmt, ast.If):
        return all(_plain(s) for s in (*stmt.body, *stmt.orelse))
    return False


def _surely_bound(body: Sequence[ast.stmt]) -> set[str]:
    """The names a block binds on every way through it (an ``if``: those both its branches bind)."""
    out: set[str] = set()
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
            out |= bound_names(stmt)
        elif isinstance(stmt, ast.If):
            out |= _surely_bound(stmt.body) & _surely_bound(stmt.orelse)
    return out


__all__ = [
    "MAX_CALL", "MAX_SETUP", "TEST_NAME", "call_program", "marked_module", "path_program", "setup_program",
    "statements_program",
]  # fmt: skip
