"""Pieces of a package's Python that :mod:`abiprobe.binary.pysource` keeps for the planner to evaluate:
expressions over run-time values (``torch.version.cuda``, ``sys.version_info``, ``platform.machine()``,
``os.environ``), the exceptions a handler catches, and a version module's constants."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TypeVar

# the modules whose values the set and the target fix (abiprobe.analyze.runtime evaluates them)
RUNTIME_ROOTS = frozenset({"torch", "sys", "platform", "os"})
_BUILTINS = frozenset({"str", "int", "float", "len", "tuple", "bool", "min", "max", "hasattr", "map"})
_FORBIDDEN = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr,
              ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)  # fmt: skip
_BUILTINS_TOO = frozenset({"sorted", "range", "list"})  # read in a comprehension's loop
# pure functions of the libraries a run-time expression may call (``Version(torch.__version__).minor``)
PURE_FUNCTIONS = frozenset({"packaging.version.Version", "packaging.version.parse"})
_MAX_DEPTH = 8
_N = TypeVar("_N", bound=ast.AST)
UNKNOWN_NAME = "__abiprobe_unknown__"  # an operand of and/or that is no run-time value


def runtime_text(
    node: ast.expr,
    dotted: Callable[[ast.expr], str | None],
    local: Callable[[str], ast.expr | None],
    extra: frozenset[str] = frozenset(),
    call: Callable[[ast.Call], ast.expr | None] | None = None,
) -> str | None:
    """The source text of ``node`` with import aliases spelled out and assigned names replaced by their
    values, when it reads nothing but constants and :data:`RUNTIME_ROOTS` values (and at least one of
    those); None otherwise. ``extra``: names that stand for values the planner fills in (a function's
    parameters). ``call`` may stand a call for a run-time expression of its own (a test of whether the
    set installs a path, :func:`abiprobe.binary.pyreturns.exists_test`)."""
    if not _may_read_runtime(node, dotted, local, extra, call is not None):  # without copying ``node``
        return None
    rewriter = _Rewriter(dotted, local, call)
    rewriter.extra = extra
    out = rewriter.visit(clone(node))
    if not rewriter.ok or not rewriter.reads_runtime or rewriter.budget < 0:
        return None
    return ast.unparse(ast.fix_missing_locations(out))


def clone(node: _N) -> _N:
    """A copy of ``node``'s tree (a rewriter changes it in place): its nodes and lists new, the constants
    and names in it shared. The same tree as ``copy.deepcopy`` makes, several times faster (no memo)."""
    new = node.__class__()
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            value = clone(value)
        elif isinstance(value, list):
            value = [clone(v) if isinstance(v, ast.AST) else v for v in value]
        setattr(new, field, value)
    for attr in node._attributes:
        if hasattr(node, attr):
            setattr(new, attr, getattr(node, attr))
    return new


_PRECHECK_BUDGET = 5000  # names looked at before leaving the answer to the rewriter itself
_REWRITE_BUDGET = 2000  # assigned values the rewriter puts in before it gives the expression up


def _may_read_runtime(
    node: ast.expr,
    dotted: Callable[[ast.expr], str | None],
    local: Callable[[str], ast.expr | None],
    extra: frozenset[str] = frozenset(),
    calls: bool = False,
) -> bool:
    """Whether rewriting ``node`` could read a run-time value: a name in it is one (spelled through the
    import aliases; an attribute's root is its base name's), directly or through the assigned values
    the rewriter puts in its place (as deep as it goes). Most conditions a scan asks about read none,
    and copying them to find out was most of a scan's time. True (ask the rewriter) past a budget: a
    module whose assignments refer to each other many times over is no slower than before."""
    budget = [_PRECHECK_BUDGET]

    def may(node: ast.expr, depth: int, seen: frozenset[str]) -> bool:
        names, has_call = _names_in(node)
        if calls and has_call:  # a call the hook may stand a run-time value for
            return True
        for sub in names:
            budget[0] -= 1
            if budget[0] < 0:
                return True
            value = local(sub.id) if sub.id not in seen else None
            if value is not None and depth < _MAX_DEPTH:
                if may(value, depth + 1, seen | {sub.id}):
                    return True
            elif sub.id in extra or (dotted(sub) or sub.id).split(".")[0] in RUNTIME_ROOTS:
                return True
        return False

    return may(node, 0, frozenset())


def _names_in(node: ast.expr) -> tuple[list[ast.Name], bool]:
    """The names in ``node`` (in ``ast.walk``'s order) and whether it holds a call, found once per node
    (a module's assigned values are looked into again for every expression that reads them)."""
    found: tuple[list[ast.Name], bool] | None = getattr(node, "_abiprobe_names", None)
    if found is None:
        names: list[ast.Name] = []
        has_call = False
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                names.append(sub)
            elif isinstance(sub, ast.Call):
                has_call = True
        found = (names, has_call)
        node._abiprobe_names = found  # type: ignore[attr-defined]
    return found


class _Rewriter(ast.NodeTransformer):
    def __init__(
        self,
        dotted: Callable[[ast.expr], str | None],
        local: Callable[[str], ast.expr | None],
        call: Callable[[ast.Call], ast.expr | None] | None = None,
    ):
        self.dotted, self.local, self.call = dotted, local, call
        self.ok, self.reads_runtime, self.depth = True, False, 0
        self.seen: set[str] = set()
        self.extra: frozenset[str] = frozenset()
        # substitutions left: assignments made from each other many times over make them exponential
        # (flashinfer 0.7.4's cake_fmha.py); past the budget the expression is no run-time value (None)
        self.budget = _REWRITE_BUDGET
        self.loop_names: list[str] = []  # the names a comprehension binds, inside it

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if self.budget < 0:
            return node
        if isinstance(node, _FORBIDDEN):
            self.ok = False
            return node
        return super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        value = self.local(node.id) if node.id not in self.seen else None
        if value is not None and self.depth < _MAX_DEPTH:
            self.budget -= 1
            if self.budget < 0:
                return node
            self.seen.add(node.id)
            self.depth += 1
            out: ast.AST = self.visit(clone(value))
            self.depth -= 1
            self.seen.discard(node.id)
            return out
        if node.id in self.extra:
            self.reads_runtime = True
            return node
        if node.id.startswith("__abiprobe_") or node.id in self.loop_names:  # the planner's own names
            return node
        name = self.dotted(node) or node.id
        if name.split(".")[0] in RUNTIME_ROOTS:
            self.reads_runtime = True
            return _name_node(name)
        if name in PURE_FUNCTIONS:  # spelled out, as the planner's values name it
            return _name_node(name)
        if node.id not in _BUILTINS and node.id not in _BUILTINS_TOO:
            self.ok = False
        return node

    def _comprehension(self, node: ast.GeneratorExp | ast.ListComp) -> ast.AST:
        """``[f(x) for x in items if test]`` over one loop of a plain name."""
        (loop,) = node.generators if len(node.generators) == 1 else (None,)
        if loop is None or not isinstance(loop.target, ast.Name) or loop.is_async:
            self.ok = False
            return node
        loop.iter = self.visit(loop.iter)
        self.loop_names.append(loop.target.id)
        node.elt = self.visit(node.elt)
        loop.ifs = [self.visit(i) for i in loop.ifs]
        self.loop_names.pop()
        return node

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.AST:
        return self._comprehension(node)

    def visit_ListComp(self, node: ast.ListComp) -> ast.AST:
        return self._comprehension(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if self.call is not None and self.depth < _MAX_DEPTH:
            self.depth += 1
            out = self.call(node)
            self.depth -= 1
            if out is not None:
                self.reads_runtime = True
                return out
        return self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        """An operand that is no run-time value stands as :data:`UNKNOWN_NAME`: ``is_windows and msvc``
        is False on Linux whatever the parameter ``msvc`` is (the evaluator short-circuits over it)."""
        operands: list[ast.expr] = []
        for value in node.values:
            was_ok, self.ok, reads = self.ok, True, self.reads_runtime
            out = self.visit(value)
            known = self.ok and isinstance(out, ast.expr)
            operands.append(out if known else ast.Name(UNKNOWN_NAME, ast.Load()))
            self.ok = was_ok
            if not known:  # what an operand that is no run-time value read does not make the test one
                self.reads_runtime = reads
        node.values = operands
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        name = self.dotted(node)
        if name is not None and name.split(".")[0] in RUNTIME_ROOTS:
            if isinstance(node.value, ast.Name) and self.local(node.value.id) is not None:
                return self.generic_visit(node)
            self.reads_runtime = True
            return _name_node(name)
        if node.attr.startswith("__"):
            self.ok = False
            return node
        return self.generic_visit(node)


def _name_node(dotted: str) -> ast.expr:
    parts = dotted.split(".")
    out: ast.expr = ast.Name(parts[0], ast.Load())
    for p in parts[1:]:
        out = ast.Attribute(out, p, ast.Load())
    return out


def catches(node: ast.expr | None) -> tuple[str, ...]:
    """The exception class names an ``except`` clause names (``BaseException`` for a bare one)."""
    if node is None:
        return ("BaseException",)
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    return tuple(ast.unparse(i).rsplit(".", 1)[-1] for i in items)


def version_constants(tree: ast.Module) -> tuple[tuple[str, str | None], ...]:
    """A version module's top-level string (or None) constants: ``cuda: Optional[str] = '12.8'``."""
    out: list[tuple[str, str | None]] = []
    for stmt in tree.body:
        target = value = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Constant):
            continue
        if value.value is None or isinstance(value.value, str):
            out.append((target.id, value.value))
    return tuple(out)


__all__ = ["RUNTIME_ROOTS", "UNKNOWN_NAME", "catches", "runtime_text", "version_constants"]
