"""Values a package's own functions return, followed for :mod:`abiprobe.binary.pysource` (nothing is run).

A load's path is often what a function of the package returns (``lib = _library_path()`` then
``CDLL(str(lib))``), in the same module or one imported from the package. The function's returns are read
in order with its arguments bound (the caller's constant or path texts, else its defaults): each return's
path expression is evaluated in the callee's module (its imports, constants and ``__file__``) with the
assignments before it; a return under a run-time test (``torch.version.cuda``, ``os.environ``, a file the
set has: ``path.exists()``) is one branch of a ``{=(a if test else b)=}`` choice the planner evaluates. A
function whose returns differ under a test abiprobe cannot know, or return what it cannot evaluate, is not
followed (the caller keeps its expression: the planner's ``unknown`` unit).

A ``importlib.machinery.FileFinder(folder, ...).find_spec(name).origin`` (torchvision's and torchcodec's
``_get_extension_path``) is the file ``folder/name`` with an extension-module suffix (``*.so``).

Names a module imports from the package (``from .consts import PACKAGE_DIR``) are that module's constants.
"""

from __future__ import annotations

import ast
import contextlib
import posixpath
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from abiprobe.binary.pyflow import RUNTIME_ROOTS, UNKNOWN_NAME, clone
from abiprobe.binary.pyimports import module_name
from abiprobe.binary.pyinterp import bound_names, changed_names
from abiprobe.binary.pyparse import parse_expr, parse_module

TOKEN = re.compile(r"\{=(.+?)=\}")
EXISTS = "__abiprobe_exists__"  # the planner's test of whether the set installs a path (or glob)
OBJECT = "__abiprobe_object__"  # an instance of one of the package's classes, by its fields
_MAX_DEPTH = 4  # functions followed inside one another
# parsed trees kept for calls into modules read before (a tree is about 40 bytes per byte of source: a
# wheel of 126 MB of Python kept whole is 5 GB); one dropped is parsed again when a call needs it
_TREES_KEPT = 64
_TREE_BYTES_KEPT = 16 << 20
_BUDGET = 400  # calls followed (tried) in one module
_NOT_FOLLOWED = (RecursionError, MemoryError, ValueError, TypeError, AttributeError, KeyError, IndexError)
_Return = tuple[list[tuple[ast.expr, bool]], bool, dict[str, ast.expr], ast.expr | None]


class Package:
    """The package's modules, parsed on demand, for following calls and imported names across modules.
    ``make(module, path)`` builds a scanner for a module (:class:`abiprobe.binary.pysource._Scanner`)."""

    def __init__(self, sources: Mapping[str, bytes], make: Callable[[str, str], Any]) -> None:
        self.sources = sources
        self.make = make
        self.paths = {n: p for p in sources if (n := module_name(p)) is not None}
        # each module's tree (None: not Python) and its source's size, the most recent last
        self._trees: OrderedDict[str, tuple[ast.Module | None, int]] = OrderedDict()
        self._tree_bytes = 0
        self._scanners: dict[str, Any] = {}
        self.busy: set[tuple[str, str]] = set()  # functions being followed (no recursion)
        self.reading = 0  # reading a module's top level for its names: no call is followed
        # calls are followed while reading a module that loads libraries by path (their cost is kept to
        # the code that loads: a package of thousands of modules parsed for their imports pays nothing)
        self.active = False
        self.budget = 0  # calls left to follow in the module being read (set by start)
        self._runtime: dict[tuple[str, str], bool] = {}
        self.unfollowed = ""  # the first return of a function followed for a load that stopped it
        self.values: dict[tuple[str, str, str], ast.expr | None] = {}  # returned_expr, by call
        # returned_path by call: the path, and the return it stopped at
        self.paths_returned: dict[tuple[str, str, str], tuple[str | None, str]] = {}
        self.depth = 0

    def tree(self, module: str) -> ast.Module | None:
        """``module``'s syntax tree (parsed again when it was dropped: the same tree, new nodes)."""
        if module in self._trees:
            self._trees.move_to_end(module)
            return self._trees[module][0]
        path = self.paths.get(module)
        source = self.sources[path] if path is not None else b""
        tree = parse_module(source) if path is not None else None
        self._trees[module] = (tree, len(source))
        self._tree_bytes += len(source)
        while len(self._trees) > 1 and (
            len(self._trees) > _TREES_KEPT or self._tree_bytes > _TREE_BYTES_KEPT
        ):
            self._tree_bytes -= self._trees.popitem(last=False)[1][1]
        return tree

    def function(self, module: str, name: str) -> ast.FunctionDef | None:
        tree = self.tree(module)
        if tree is None:
            return None
        return next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name), None)

    def start(self, loads: bool) -> None:
        """Reading a module: calls are followed when it ``loads`` libraries, up to a bounded number."""
        self.active, self.budget = loads, _BUDGET

    def may_follow(self) -> bool:
        """Whether a call may be followed (a call followed before is remembered at no cost)."""
        return self.active and not self.reading and self.depth < _MAX_DEPTH

    def spend(self) -> bool:
        """Whether one more call not followed before may be followed in the module being read."""
        if self.budget <= 0:
            return False
        self.budget -= 1
        return True

    def reads_runtime(self, module: str, function: ast.FunctionDef) -> bool:
        """Whether ``function`` may return a run-time value: it reads a module the set and the target fix
        (``torch``, ``sys``, ``platform``, ``os``), builds an instance of one of the package's classes, or
        calls a function of the package that may (the arguments it is given are not counted)."""
        key = (module, function.name)
        if key in self._runtime:
            return self._runtime[key]
        self._runtime[key] = False  # a cycle of calls reads nothing more
        scanner = self.scanner(module)
        answer = False
        if scanner is not None:
            for node in ast.walk(function):
                if not isinstance(node, ast.Name):
                    continue
                target = scanner.aliases.get(node.id, "")
                if target.split(".")[0] in RUNTIME_ROOTS:
                    answer = True
                    break
                owner, _, name = target.rpartition(".")
                tree = self.tree(owner) if owner in self.paths else None
                other = (
                    None
                    if tree is None
                    else next(
                        (
                            s
                            for s in tree.body
                            if isinstance(s, (ast.FunctionDef, ast.ClassDef)) and s.name == name
                        ),
                        None,
                    )
                )
                if isinstance(other, ast.ClassDef) or (
                    isinstance(other, ast.FunctionDef) and self.reads_runtime(owner, other)
                ):
                    answer = True
                    break
        self._runtime[key] = answer
        return answer

    def register(self, module: str, scanner: Any) -> None:
        """The scanner reading ``module`` now: calls into the module use its state."""
        self._scanners.setdefault(module, scanner)

    def scanner(self, module: str) -> Any:
        """A scanner that has read ``module``'s top-level imports and assignments (functions and classes
        named, not read; no call followed while reading), or None."""
        if module in self._scanners:
            return self._scanners[module]
        tree = self.tree(module)
        if tree is None:
            return None
        scanner = self.make(module, self.paths[module])
        scanner.pkg = self
        self._scanners[module] = scanner
        top = []
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                scanner.aliases[stmt.name] = f"{module}.{stmt.name}"
            elif isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.If, ast.Try)):
                top.append(stmt)
        self.reading += 1
        try:
            with contextlib.suppress(RecursionError):
                scanner.block(top, {})
        finally:
            self.reading -= 1
        return scanner


def imported_value(scanner: Any, name: str) -> str | None:
    """The constant (a path or string text) a name imported from another module of the package has."""
    package: Package | None = scanner.pkg
    target = scanner.aliases.get(name)
    if package is None or not package.active or target is None or "." not in target:
        return None
    module, _, attr = target.rpartition(".")
    if module == scanner.module or module not in package.paths:
        return None
    other = package.scanner(module)
    if other is None:
        return None
    value = other.constants.get(attr)
    return value if isinstance(value, str) else None


def file_finder_origin(scanner: Any, node: ast.Attribute, params: dict[str, str]) -> str | None:
    """``FileFinder(folder, details).find_spec(name).origin`` (through assignments): ``folder/name.*so``."""
    spec = _through(scanner, node.value)
    if not (isinstance(spec, ast.Call) and isinstance(spec.func, ast.Attribute) and spec.args):
        return None
    if spec.func.attr != "find_spec":
        return None
    finder = _through(scanner, spec.func.value)
    if not (isinstance(finder, ast.Call) and finder.args):
        return None
    callee = scanner.dotted(finder.func) or ""
    if callee.rsplit(".", 1)[-1] != "FileFinder":
        return None
    folder, name = scanner._path(finder.args[0], params), scanner.text(spec.args[0], params)
    if folder is None or name is None or "*" in name:
        return None
    return posixpath.join(folder, f"{name}.*so")


def _through(scanner: Any, node: ast.expr) -> ast.expr:
    for _ in range(4):
        if not isinstance(node, ast.Name):
            break
        nxt = (scanner.local_nodes if scanner.in_function else {}).get(node.id) or scanner.module_nodes.get(
            node.id
        )
        if nxt is None:
            break
        node = nxt
    return node


def returned_path(scanner: Any, call: ast.Call, params: dict[str, str]) -> str | None:
    """The path text a call of one of the package's functions returns, or None (see the module doc)."""
    package: Package | None = scanner.pkg
    if package is None or not package.may_follow():
        return None
    found = _function_of(scanner, call.func)
    if found is None:
        return None
    module, function = found
    callee = scanner if module == scanner.module else package.scanner(module)
    key = (module, function.name)
    if callee is None or key in package.busy:
        return None
    try:
        bound = _bind(scanner, callee, function, call, params)
        if bound is None:
            return None
        memo = (module, function.name, repr(sorted(bound.items())))
        if memo not in package.paths_returned and not package.spend():
            return None
        if memo not in package.paths_returned:
            before, package.unfollowed = package.unfollowed, ""
            text = _returned_path(scanner, package, callee, key, function, bound)
            package.paths_returned[memo] = (text, package.unfollowed)
            package.unfollowed = before or package.unfollowed
        text, why = package.paths_returned[memo]
        package.unfollowed = package.unfollowed or (why if text is None else "")
        return text
    except _NOT_FOLLOWED:  # nested deeper than followed, or code of a shape not foreseen: not followed
        return None


def _returned_path(
    scanner: Any,
    package: Package,
    callee: Any,
    key: tuple[str, str],
    function: ast.FunctionDef,
    bound: dict[str, str],
) -> str | None:
    # a parameter given a run-time value (an instance of the package's class, say) is read as one
    values = {p: e for p, t in bound.items() if (e := _single(t)) is not None}
    bound = {p: t for p, t in bound.items() if p not in values}
    package.busy.add(key)
    package.depth += 1
    saved = (callee.local_nodes, callee.in_function, callee.guards, callee.loops)
    try:
        callee.local_nodes = dict(values)
        callee.in_function, callee.guards, callee.loops = True, [], []
        returns = list(_Returns(callee).walk(function.body, False))
        branches: list[tuple[list[str], bool, str | None]] = []
        for guards, opaque, snapshot, value in returns:
            callee.local_nodes = dict(snapshot)
            tests = []
            for test, taken in guards:
                text = callee.runtime(test)
                if text is None:
                    return None
                tests.append(text[2:-2] if taken else f"not ({text[2:-2]})")
            text = "" if value is None or _is_none(value) else callee._path(value, bound)
            if text is None and not package.unfollowed and value is not None:
                package.unfollowed = (
                    f"{function.name} returns {ast.unparse(value)} ({callee.path} line {value.lineno})"
                )
            branches.append((tests, opaque, _normal(text)))
        return _combine(branches)
    finally:
        callee.local_nodes, callee.in_function, callee.guards, callee.loops = saved
        package.depth -= 1
        package.busy.discard(key)


def returned_expr(scanner: Any, call: ast.Call) -> ast.expr | None:
    """The run-time expression a call of one of the package's functions returns (its returns under
    run-time tests as ``a if test else b``), or an instance of one of its classes (``__abiprobe_object__``
    with the fields it is given); None when it returns anything else."""
    package: Package | None = scanner.pkg
    if package is None or not package.may_follow():
        return None
    made = _instance(scanner, call)
    if made is not None:
        return made
    found = _function_of(scanner, call.func)
    if found is None:
        return None
    module, function = found
    callee = scanner if module == scanner.module else package.scanner(module)
    key = (module, function.name)
    if callee is None or key in package.busy or not package.reads_runtime(module, function):
        return None
    try:
        package.depth += 1  # the arguments' own calls are followed one level down
        try:
            args = _arguments(scanner, function, call)
        finally:
            package.depth -= 1
        if args is None:
            return None
        memo = (module, function.name, repr(sorted((k, ast.unparse(v)) for k, v in args.items())))
        if memo not in package.values and not package.spend():
            return None
        if memo not in package.values:
            package.values[memo] = _returned_expr(package, callee, key, function, args)
        return package.values[memo]
    except _NOT_FOLLOWED:  # nested deeper than followed, or code of a shape not foreseen: not followed
        return None


def _returned_expr(
    package: Package, callee: Any, key: tuple[str, str], function: ast.FunctionDef, args: dict[str, ast.expr]
) -> ast.expr | None:
    package.busy.add(key)
    package.depth += 1
    saved = (callee.local_nodes, callee.in_function, callee.guards, callee.loops)
    out: ast.expr | None = None
    try:
        callee.local_nodes, callee.in_function, callee.guards, callee.loops = dict(args), True, [], []
        branches: list[tuple[list[str], bool, str | None]] = []
        for guards, opaque, snapshot, value in list(_Returns(callee).walk(function.body, False)):
            callee.local_nodes = dict(snapshot)
            tests = [callee.runtime(t) for t, _taken in guards]
            if any(t is None for t in tests):
                return None
            text = _value_text(callee, value)
            tests = [
                t[2:-2] if taken else f"not ({t[2:-2]})" for t, (_n, taken) in zip(tests, guards, strict=True)
            ]
            branches.append((tests, opaque, text))
        expr = _combine_values(branches)
        out = None if expr is None else parse_expr(expr)
        return out
    finally:
        callee.local_nodes, callee.in_function, callee.guards, callee.loops = saved
        package.depth -= 1
        package.busy.discard(key)


def _value_text(scanner: Any, value: ast.expr | None) -> str | None:
    if value is None:  # a raise: no value
        return UNKNOWN_NAME
    if isinstance(value, ast.Constant):
        return repr(value.value)
    text = scanner.runtime(value)
    return None if text is None else text[2:-2]


def _combine_values(branches: list[tuple[list[str], bool, str | None]]) -> str | None:
    if not branches or any(text is None for _t, _o, text in branches):
        return None
    if any(opaque for _t, opaque, _x in branches):
        values = {text for _t, _o, text in branches}
        return values.pop() if len(values) == 1 else None
    acc = "None"  # falling off the end
    for tests, _opaque, text in reversed(branches):
        acc = f"({text} if {' and '.join(f'({t})' for t in tests)} else {acc})" if tests else str(text)
    return acc


def _expr_of(scanner: Any, node: ast.expr) -> ast.expr:
    """An argument as a run-time expression in the caller (:data:`UNKNOWN_NAME` when it is none)."""
    if isinstance(node, ast.Constant):
        return clone(node)
    text = scanner.runtime(node)
    expr = None if text is None else parse_expr(text[2:-2])
    return ast.Name(UNKNOWN_NAME, ast.Load()) if expr is None else expr


def _positional(function: ast.FunctionDef, call: ast.Call) -> list[str] | None:
    """The callee's positional parameter names, when the call binds by position alone (no ``*args`` or
    ``**kwargs`` on either side); None otherwise."""
    args = function.args
    if (
        args.vararg is not None
        or args.kwarg is not None
        or any(isinstance(a, ast.Starred) for a in call.args)
    ):
        return None
    return [a.arg for a in (*args.posonlyargs, *args.args)]


def _arguments(scanner: Any, function: ast.FunctionDef, call: ast.Call) -> dict[str, ast.expr] | None:
    names = _positional(function, call)
    if names is None:
        return None
    out = {n: _expr_of(scanner, a) for n, a in zip(names, call.args, strict=False)}
    out.update({k.arg: _expr_of(scanner, k.value) for k in call.keywords if k.arg is not None})
    return out


def _instance(scanner: Any, call: ast.Call) -> ast.expr | None:
    """``Specs(a, b=c)`` of a class of the package whose fields are annotated (a dataclass's way), with no
    truth value of its own: ``__abiprobe_object__(a=..., b=...)``."""
    package: Package = scanner.pkg
    dotted = scanner.dotted(call.func)
    if dotted is None:
        return None
    module, _, name = dotted.rpartition(".")
    module = module or scanner.module
    tree = package.tree(module) if module in package.paths else None
    cls = (
        None
        if tree is None
        else next((s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == name), None)
    )
    if cls is None:
        return None
    fields = [
        s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    ]
    defined = {s.name for s in cls.body if isinstance(s, ast.FunctionDef)}
    if not fields or defined & {"__bool__", "__len__", "__init__", "__getattr__"}:
        return None
    package.depth += 1
    try:
        given = {f: _expr_of(scanner, a) for f, a in zip(fields, call.args, strict=False)}
        given.update({k.arg: _expr_of(scanner, k.value) for k in call.keywords if k.arg is not None})
    finally:
        package.depth -= 1
    keywords = [ast.keyword(k, v) for k, v in given.items()]
    return ast.Call(ast.Name(OBJECT, ast.Load()), [], keywords)


def _single(text: str) -> ast.expr | None:
    """The expression of a text that is one ``{=expr=}`` and nothing else."""
    m = TOKEN.fullmatch(text)
    if m is None or "=}" in m.group(1) or "{=" in m.group(1):
        return None
    return parse_expr(m.group(1))


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _normal(text: str | None) -> str | None:
    return None if text is None else normal_path(text)


_UP_FROM_PARAMETER = re.compile(r"\{\w+\}/\.\.(?:/|$)")


def normal_path(text: str) -> str:
    """``posixpath.normpath`` of the folders before any ``{=expr=}`` part of a path text."""
    head, mark, rest = text.partition("{=")
    if "/" not in head:
        return text
    up = _UP_FROM_PARAMETER.search(head)
    if up is not None:  # ``{folder}/..``: what the parameter holds is known only when a call binds it
        above = normal_path(head[: up.start()]) + "/" if up.start() else ""
        return f"{above}{head[up.start() :]}{mark}{rest}"
    if not mark:
        return posixpath.normpath(text)
    folder, _, name = head.rpartition("/")
    folder = posixpath.normpath(folder) if folder else ""
    return f"{folder}/{name}{mark}{rest}" if folder and folder != "." else f"{name}{mark}{rest}"


def _function_of(scanner: Any, func: ast.expr) -> tuple[str, ast.FunctionDef] | None:
    """The package module and the module-level function a call names (following re-exports)."""
    package: Package = scanner.pkg
    dotted = scanner.dotted(func)
    if dotted is None:
        return None
    module, _, name = dotted.rpartition(".")
    module = module or scanner.module
    for _ in range(4):
        if module not in package.paths:
            return None
        function = package.function(module, name)
        if function is not None:
            return module, function
        other = package.scanner(module)
        alias = None if other is None else other.aliases.get(name)
        if alias is None or "." not in alias:
            return None
        module, _, name = alias.rpartition(".")
    return None


def _bind(
    scanner: Any, callee: Any, function: ast.FunctionDef, call: ast.Call, params: dict[str, str]
) -> dict[str, str] | None:
    """The callee's parameters as texts: the call's arguments evaluated in the caller, else the
    defaults, in the callee's module."""
    names = _positional(function, call)
    if names is None:
        return None
    args = function.args
    given: dict[str, ast.expr] = dict(zip(names, call.args, strict=False))
    given.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    defaults = dict(zip(names[len(names) - len(args.defaults) :], args.defaults, strict=True))
    defaults.update(
        {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
    )
    out: dict[str, str] = {}
    for name in (*names, *(a.arg for a in args.kwonlyargs)):
        if name in given:
            text = scanner._path(given[name], params)
        elif name in defaults:
            text = callee._path(defaults[name], {})
        else:
            text = None
        out[name] = text if text is not None else "*"
    return out


class _Returns:
    """A function's returns in order: the run-time tests above each (and which branch), whether a test
    abiprobe cannot know is above it, the assignments before it, and its value."""

    def __init__(self, scanner: Any) -> None:
        self.s = scanner

    def walk(self, body: list[ast.stmt], opaque: bool) -> Iterator[_Return]:
        s = self.s
        for stmt in body:
            if isinstance(stmt, ast.Return):
                yield list(s.guards), opaque, dict(s.local_nodes), stmt.value or ast.Constant(None)
                return
            if isinstance(stmt, ast.Raise):
                yield list(s.guards), opaque, dict(s.local_nodes), None
                return
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                self.assign(stmt)
            elif isinstance(stmt, ast.If):
                yield from self.branch(stmt, opaque)
            elif isinstance(stmt, ast.Try):  # what it returns when nothing raises (handlers not read)
                yield from self.walk(stmt.body + stmt.orelse + stmt.finalbody, opaque)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                yield from self.walk(stmt.body, opaque)
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                yield from self.walk(stmt.body, True)
                yield from self.walk(stmt.orelse, True)
                # after a loop that ran any number of times, what it binds holds no one known value
                for name in bound_names(stmt):
                    s.forget(name)
            for name in changed_names(stmt):
                s.forget(name)

    def branch(self, stmt: ast.If, opaque: bool) -> Iterator[_Return]:
        s = self.s
        if s.runtime(stmt.test) is None:
            yield from self.walk(stmt.body, True)
            yield from self.walk(stmt.orelse, True)
            return
        s.guards.append((stmt.test, True))
        yield from self.walk(stmt.body, opaque)
        s.guards[-1] = (stmt.test, False)
        yield from self.walk(stmt.orelse, opaque)
        s.guards.pop()

    def assign(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        s = self.s
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if stmt.value is None or len(targets) != 1:
            return
        target = targets[0]
        if isinstance(target, ast.Name):
            s.local_nodes[target.id] = s.guarded(stmt.value, s.local_nodes.get(target.id), target.id)
        elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            for i, e in enumerate(target.elts):
                assert isinstance(e, ast.Name)
                item = ast.Subscript(stmt.value, ast.Constant(i), ast.Load())
                s.local_nodes[e.id] = s.guarded(item, s.local_nodes.get(e.id), e.id)


def replace_name(node: ast.expr, name: str, value: ast.expr) -> ast.expr:
    """``node`` with each read of ``name`` replaced by ``value`` (unless ``value`` is large: a name
    re-assigned under many tests would grow the tree past any use)."""
    if not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)) or _larger(value, 64):
        return node

    class _Swap(ast.NodeTransformer):
        def visit_Name(self, n: ast.Name) -> ast.AST:
            return clone(value) if n.id == name else n

    out: ast.expr = _Swap().visit(clone(node))
    return out


def _larger(node: ast.AST, limit: int) -> bool:
    return any(i >= limit for i, _n in enumerate(ast.walk(node)))


def _combine(branches: list[tuple[list[str], bool, str | None]]) -> str | None:
    """One path text for a function's returns: the first whose tests hold, as a run-time choice."""
    if not branches:
        return None
    if any(opaque for _t, opaque, _x in branches):  # which return runs is not known: only one value will do
        values = {text for _t, _o, text in branches if text != ""}
        return values.pop() if len(values) == 1 else None
    if branches[-1][2] is None and not branches[-1][0]:
        return None  # what it returns unless a test says otherwise cannot be followed
    acc = "''"
    plain: str | None = None
    for tests, _opaque, text in reversed(branches):
        # a return abiprobe cannot follow: unknown when the target reaches it (the planner says so)
        expr = UNKNOWN_NAME if text is None else as_expr(text)
        if not tests:
            acc, plain = expr, text
            continue
        acc, plain = f"({expr} if {' and '.join(f'({t})' for t in tests)} else {acc})", None
    return plain if plain is not None else f"{{={acc}=}}"


def as_expr(text: str) -> str:
    """A path text with ``{=expr=}`` parts as one expression: ``'lib' + str(expr) + '.so'``."""
    parts = TOKEN.split(text)
    out = [repr(p) if i % 2 == 0 else f"str({p})" for i, p in enumerate(parts) if p or i % 2]
    return " + ".join(out) if out else "''"


def exists_test(scanner: Any, node: ast.Call) -> ast.expr | None:
    """``path.exists()`` / ``os.path.exists(path)`` (``is_file``, ``isfile``) on a path abiprobe follows:
    the planner's test of whether the set installs it."""
    func = node.func
    target: ast.expr | None = None
    if isinstance(func, ast.Attribute) and func.attr in ("exists", "is_file") and not node.args:
        target = func.value
    elif (scanner.dotted(func) or "") in ("os.path.exists", "os.path.isfile") and len(node.args) == 1:
        target = node.args[0]
    if target is None:
        return None
    path = scanner.path_of(target, {})
    if path is None or re.search(r"\{\w+\}", TOKEN.sub("", path)):
        return None  # a parameter no call fills
    return parse_expr(f"{EXISTS}({as_expr(path)})")


__all__ = [
    "EXISTS",
    "OBJECT",
    "Package",
    "as_expr",
    "exists_test",
    "file_finder_origin",
    "imported_value",
    "normal_path",
    "returned_expr",
    "returned_path",
]
