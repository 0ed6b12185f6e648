"""What a package's own Python code loads, read statically from its source (nothing is run).

For each module: the events its top-level code runs at import, in order (imports, libraries loaded by
path, calls of functions that may load), and the events inside its functions (which run only when the
function is called). Libraries are loaded by path through ``torch.ops.load_library``,
``torch.classes.load_library``, ``ctypes.CDLL`` / ``ctypes.cdll.LoadLibrary`` (and their aliases); the path
expression is evaluated over ``__file__``, ``os.path`` and ``pathlib`` operations, f-strings, module
constants and function parameters (``{name}``; a call site's constant arguments fill them in). A part built
from run-time values (``torch.version.cuda``, ``sys.version_info``, ``platform.machine()``, ``os.environ``)
is kept as ``{=expr=}`` for the planner to evaluate with the set's and the target's values. A path it
cannot evaluate is matched by the name it spells (``**/_C.*so`` for ``_get_extension_path("_C")``); one
that spells none keeps its expression (the planner's ``unknown`` unit).

Control flow around loads is kept as events: an ``if`` on run-time values (any other test is opaque: its
text is ``""``), a ``for`` over a list, a glob or a directory (any other loop is an opaque branch),
``try`` with the exception names each handler catches, ``raise`` with its message, ``break``,
``continue`` and ``return``.

Full parsing costs seconds on a package of thousands of modules, so only modules whose text names a load
call, a dynamic import, or a function found to load are parsed; the others are read line by line for their
imports (those inside a ``def`` run later and are left out).
"""

from __future__ import annotations

import ast
import builtins
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence

from abiprobe.binary.pyflow import UNKNOWN_NAME, catches, runtime_text, version_constants
from abiprobe.binary.pyimports import absolute as _absolute
from abiprobe.binary.pyimports import module_name, scan_imports
from abiprobe.binary.pyinterp import MODULE_HOOK, Interpreter, bound_names, changed_names
from abiprobe.binary.pyparse import parse_module
from abiprobe.binary.pyreturns import (
    Package,
    as_expr,
    exists_test,
    file_finder_origin,
    imported_value,
    normal_path,
    replace_name,
    returned_expr,
    returned_path,
)
from abiprobe.binary.pyslice import marked_module, path_program, statements_program
from abiprobe.binary.pystatic import StaticValues
from abiprobe.model.facts import PyEvent, PyFunction, PyModule, all_events

LOAD_APIS = {
    "torch.ops.load_library": "torch.ops.load_library",
    "torch.classes.load_library": "torch.classes.load_library",
    "ctypes.CDLL": "ctypes.CDLL",
    "ctypes.cdll.LoadLibrary": "ctypes.cdll.LoadLibrary",
    "ctypes.PyDLL": "ctypes.CDLL",
    "ctypes.cdll": "ctypes.CDLL",
}
_MARKERS = (b"load_library", b"CDLL", b"LoadLibrary", b"PyDLL", b"import_module", b"__import__",
            b"spec_from_file_location")  # fmt: skip
_UNKNOWN = "*"
TOKEN_TEXT = re.compile(r"\{=(.+)=\}", re.S)
# the ``api`` of the ``if`` a function's events sit in when its ``def`` is under run-time tests
DEFINED = "defined"
_LOAD_MARKERS = (b"load_library", b"CDLL", b"LoadLibrary", b"PyDLL", b"spec_from_file_location")
# the version of these reading rules, stored with the facts (WheelFacts.python_rules): bump it when what
# is read from a wheel's Python changes, so that facts read under older rules are read again
READ_RULES = 22
_MAX_EMBEDDED = 24_000  # characters of a load's search program with the package's modules it embeds


def scan_sources(
    sources: Mapping[str, bytes],
    read: Callable[[str], bytes | None] | None = None,
    files: Sequence[str] = (),
) -> tuple[PyModule, ...]:
    """Every module of ``sources`` (installed path -> bytes), parsed where it may load something.
    ``read``: the bytes of a small data file of the wheel (None when it is too large), for the values the
    code reads from its own files (``json.load(open(...))``); ``files``: every path the wheel installs."""
    parse = {p for p, src in sources.items() if any(m in src for m in _MARKERS) or _is_version_module(p)}
    modules: dict[str, PyModule | None] = {}
    for path in sources.keys() & CLASS_MODULES.keys():  # read for the names of one class alone
        modules[path] = class_module(path, sources[path], CLASS_MODULES[path])
        parse.discard(path)
    loaders: set[str] = set()

    def data(path: str) -> bytes | None:  # the wheel's own .py files are data too (``target.json.py``)
        return sources[path] if path in sources else read(path) if read is not None else None

    package = Package(sources, _scanner_of)
    while True:
        for path in sorted(parse - modules.keys()):
            modules[path] = scan_module(path, sources[path], data, files, package)
        found = {f.name for m in modules.values() if m for f in m.functions if _loads(f.events, loaders)}
        if found <= loaders:
            break
        loaders |= found
        marks = [n.encode() for n in loaders]
        more = {p for p, src in sources.items() if p not in parse and any(m in src for m in marks)}
        if not more:
            break
        parse |= more
    out = [modules.get(p) or scan_imports(p, src) for p, src in sorted(sources.items())]
    return tuple(m for m in out if m is not None)


# modules read for the attributes of one class they define, which other packages' code tests
# (``hasattr(torch.Tensor, "__dlpack_c_exchange_api__")``): kept as the module's constants
# ``Class.name`` (their values are not kept)
CLASS_MODULES = {"torch/_tensor.py": "Tensor"}


def class_module(path: str, source: bytes, cls: str) -> PyModule | None:
    """A module as :data:`CLASS_MODULES` reads it: no events, the names the class body binds (its
    methods, its attributes) as constants ``Class.name``."""
    name = module_name(path)
    tree = parse_module(source)
    if name is None or tree is None:
        return None
    body = next((s.body for s in tree.body if isinstance(s, ast.ClassDef) and s.name == cls), None)
    if body is None:
        return PyModule(name, path, (), scanned=False)
    names = dict.fromkeys(n for stmt in body for n in bound_names(stmt))
    return PyModule(name, path, (), scanned=False, constants=tuple((f"{cls}.{n}", None) for n in names))


def _is_version_module(path: str) -> bool:
    return path.rsplit("/", 1)[-1] in ("version.py", "_version.py")


def _loads(events: tuple[PyEvent, ...], loaders: set[str]) -> bool:
    return any(
        e.kind == "load" or (e.kind == "call" and e.target.rsplit(".", 1)[-1] in loaders)
        for e in all_events(events)
    )


def _scanner_of(module: str, path: str) -> _Scanner:
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    return _Scanner(module, package, path)


def scan_module(
    path: str,
    source: bytes,
    read: Callable[[str], bytes | None] | None = None,
    files: Sequence[str] = (),
    others: Package | None = None,
) -> PyModule | None:
    """A module's top-level events and its functions' events, from its syntax tree (``read``/``files``:
    the wheel's small data files and installed paths; ``others``: the wheel's modules, for following
    calls and imported names across modules)."""
    name = module_name(path)
    if name is None:
        return None
    if others is not None and others.paths.get(name) == path:
        tree = others.tree(name)  # one tree per module, shared with the calls followed into it
    else:
        tree = parse_module(source)
    if tree is None:
        return scan_imports(path, source)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    scanner = _Scanner(name, package, path)
    scanner.static = StaticValues(Interpreter(path, None, read, files))
    if others is not None:
        scanner.pkg = others
        others.register(name, scanner)
        others.start(any(m in source for m in _LOAD_MARKERS))
    try:
        events = scanner.top(tree.body)
    except RecursionError:  # expressions nested deeper than the scanner follows: imports alone
        return scan_imports(path, source)
    finally:
        if others is not None:
            others.start(False)
        # the top level is read: what only its reading used goes (calls into the module later read its
        # functions, as a scanner made for such a call does), so the module's tree is not held here
        scanner.static, scanner.seen_top = None, []
    constants = version_constants(tree) if _is_version_module(path) else ()
    return PyModule(name, path, tuple(events), tuple(scanner.functions), scanned=True, constants=constants)


class _Scanner:
    def __init__(self, module: str, package: str, path: str) -> None:
        self.module, self.package, self.path = module, package, path
        self.aliases: dict[str, str] = {}  # local name -> dotted target (module or module.function)
        self.constants: dict[str, str] = {"__file__": path}
        self.functions: list[PyFunction] = []
        self.local_nodes: dict[str, ast.expr] = {}  # a function's simple assignments, by name
        self.module_nodes: dict[str, ast.expr] = {}  # the module's top-level simple assignments
        self.loops: list[bool] = []  # enclosing loops: True for one the planner runs (a list, a glob)
        self.guards: list[tuple[ast.expr, bool]] = []  # enclosing run-time tests, and which branch
        self.guard_texts: list[tuple[str, bool]] = []  # the same tests as ``{=expr=}`` text
        self.in_function = False
        self.static: StaticValues | None = None  # the top level's values known at facts time
        self.pkg: Package | None = None  # the wheel's other modules (abiprobe.binary.pyreturns)
        self.seen_top: list[ast.stmt] = []  # the top-level statements read so far
        # inside a top-level statement's blocks: the statements of the enclosing blocks read so far
        self.seen_block: list[ast.stmt] = []
        self._loading: dict[
            str, bool
        ] = {}  # a function of the module: whether it loads (or calls one that does)
        self.fn_locals: set[str] = set()  # the names the function being read binds (and its parameters)
        self.fn_prefix: list[ast.stmt] = []  # its body's statements read so far (those before the current)
        # a name assigned what a call of the package's own function returned: the call's line
        self.returned_by: dict[str, int] = {}
        self.handlers: list[str] = []  # the names enclosing ``except ... as name`` clauses bind
        self.cls: str | None = None  # the class whose method is being read
        self.static_methods: set[str] = set()  # ``Class.method`` of the module's static methods
        # names assigned where it is not known whether (or how often) the assignment runs: an opaque
        # ``if``, a loop, an ``except`` clause; a run-time test over them is not evaluated from one of them
        self.unsure: set[str] = set()
        self.unsure_depth = 0
        # the statement of the module's top level or of the function's body being read (a loop that is
        # one of them may iterate a list a program computes from the statements before it)
        self.current: ast.stmt | None = None

    def top(self, body: list[ast.stmt]) -> list[PyEvent]:
        """The module's top level, statement by statement, its facts-time values followed as it goes. A
        search of the top level (:meth:`search_end`) is also kept as a program: a ``run`` event whose
        body is the events of its statements, read as any others."""
        events: list[PyEvent] = []
        # the search being read: where it ends, where its events start, its program and its first line
        search: tuple[int, int, str, int] | None = None
        for i, stmt in enumerate(body):
            if search is None and self.static is not None and (end := self.search_end(body, i)):
                program = statements_program(body[i:end], self.seen_top, self.static.interp.env)
                search = (end, len(events), program, stmt.lineno) if program else None
            self.current = stmt
            events += self.statement(stmt, {})
            self.current = None
            if self.static is not None:
                self.static.step(stmt)
            self.seen_top.append(stmt)
            if search is not None and i + 1 == search[0]:
                _, mark, program, line = search
                events[mark:] = [PyEvent("run", "", "", (), line, tuple(events[mark:]), setup=program)]
                search = None
        return events

    def search_end(self, body: list[ast.stmt], start: int) -> int:
        """Where a search of the module's top level that starts at ``body[start]`` ends (0: none starts
        there): a loop that loads a library (over the folders it tries, z3's ``for d in _all_dirs:``),
        and the ``if`` / ``try`` / loop statements right after it that read what it binds and load or
        raise (the fallback by name, the package's error when nothing loaded)."""
        if not isinstance(body[start], (ast.For, ast.While)) or not self._calls_load(body[start]):
            return 0
        bound = bound_names(body[start]) | changed_names(body[start])
        end = start + 1
        while end < len(body):
            stmt = body[end]
            if not isinstance(stmt, (ast.If, ast.Try, ast.For, ast.While)):
                break
            if isinstance(stmt, ast.If) and _type_checking_or_main(stmt.test):
                break
            reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
            raises = any(isinstance(n, ast.Raise) for n in ast.walk(stmt))
            if not reads & bound or not (raises or self._calls_load(stmt)):
                break
            bound |= bound_names(stmt) | changed_names(stmt)
            end += 1
        return end

    def _calls_load(self, stmt: ast.stmt) -> bool:
        """Whether a statement calls a load API itself (not in the functions it defines)."""
        return any(
            isinstance(node, ast.Call)
            and (callee := self.dotted(node.func)) is not None
            and _load_api(callee)
            for node in ast.walk(stmt)
        )

    def block(self, body: list[ast.stmt], params: dict[str, str]) -> list[PyEvent]:
        events: list[PyEvent] = []
        mark = len(self.seen_block)
        for stmt in body:
            events += self.statement(stmt, params)
            if not self.in_function:
                self.seen_block.append(stmt)
        del self.seen_block[mark:]
        return events

    def statement(self, stmt: ast.stmt, params: dict[str, str]) -> list[PyEvent]:
        events = self._statement(stmt, params)
        for name in changed_names(stmt):  # ``paths.append(p)``, ``paths += [...]``: no longer its value
            self.forget(name)
        return events

    def forget(self, name: str) -> None:
        """A name whose value this reading no longer knows (changed in place, bound in a loop)."""
        nodes = self.local_nodes if self.in_function else self.module_nodes
        nodes[name] = ast.Name(UNKNOWN_NAME, ast.Load())
        self.returned_by.pop(name, None)
        if not self.in_function:
            self.constants.pop(name, None)

    def _statement(self, stmt: ast.stmt, params: dict[str, str]) -> list[PyEvent]:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.aliases[stmt.name] = f"{self.module}.{stmt.name}"
            if (
                not self.in_function
            ):  # module-level functions are recorded (nested ones run with their parent)
                self.function(stmt.name, stmt)
            return []
        if isinstance(stmt, ast.ClassDef) and not self.in_function:
            self.aliases[stmt.name] = f"{self.module}.{stmt.name}"
            methods = [s for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
            # ``@staticmethod``: ``self.method(a, b)`` binds a and b to its first two parameters
            self.static_methods |= {
                f"{stmt.name}.{m.name}"
                for m in methods
                if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in m.decorator_list)
            }
            for m in methods:  # ``Class.method``: run when called (``self.method(...)``, ``Class()``)
                self.cls = stmt.name
                self.function(f"{stmt.name}.{m.name}", m)
                self.cls = None
        if isinstance(stmt, ast.If) and _type_checking_or_main(stmt.test):
            return self.block(stmt.orelse, params)
        if isinstance(stmt, ast.Import):
            out = []
            for a in stmt.names:
                local = a.asname or a.name.split(".")[0]
                self.aliases[local] = a.name if a.asname else local
                out.append(PyEvent("import", a.name, line=stmt.lineno))
            return out
        if isinstance(stmt, ast.ImportFrom):
            base = _absolute("." * stmt.level + (stmt.module or ""), self.package)
            out = [PyEvent("import", base, line=stmt.lineno)] if base else []
            for a in stmt.names:
                if a.name == "*":
                    continue
                self.aliases[a.asname or a.name] = f"{base}.{a.name}"
                out.append(PyEvent("import", f"{base}.{a.name}", line=stmt.lineno))
            return out
        flow = self.flow(stmt, params)
        if flow is not None:
            return flow
        events = self.calls(stmt, params)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            nodes = self.local_nodes if self.in_function else self.module_nodes
            nodes[name] = self.guarded(stmt.value, nodes.get(name), name)
            self.returned_by.pop(name, None)
            value_line = getattr(stmt.value, "lineno", -1)
            if (
                isinstance(stmt.value, ast.Call)
                and not (self.unsure_depth or self.guards or self.loops)
                and any(e.kind == "call" and e.line == value_line for e in events)
            ):  # what the package's function returned, for a test on it (``if lib is None: raise``)
                self.returned_by[name] = value_line
            if self.unsure_depth:
                self.unsure.add(name)
            if self.guards:  # a value chosen by a run-time test: evaluated by the planner, not here
                self.constants.pop(name, None)
            elif not self.in_function and (value := self.path_of(stmt.value, params)) is not None:
                self.constants[name] = value
        for sub in _bodies(stmt):
            if isinstance(stmt, ast.ClassDef):  # methods run when called, not when the class is made
                sub = [s for s in sub if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
            events += self.block(sub, params)
        return events

    def function(self, name: str, stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        inner = {
            a.arg: f"{{{a.arg}}}" for a in (*stmt.args.posonlyargs, *stmt.args.args, *stmt.args.kwonlyargs)
        }
        self.local_nodes, self.in_function, loops, unsure = {}, True, self.loops, self.unsure
        self.loops, self.unsure = [], set()
        self.fn_locals = set(inner) | {n for s in stmt.body for n in bound_names(s)}
        self.fn_prefix, returned_by, self.returned_by = [], self.returned_by, {}
        current, body = self.current, []
        for s in stmt.body:  # the statements before the one being read, for a load's search program
            self.current = s
            body += self.statement(s, inner)
            self.fn_prefix.append(s)
        self.fn_prefix, self.returned_by, self.current = [], returned_by, current
        self.local_nodes, self.in_function, self.loops, self.unsure = {}, False, loops, unsure
        self.fn_locals = set()
        if self.guard_texts:  # defined only where the run-time tests around its ``def`` take that branch
            body = [PyEvent("if", self.defined_test(), DEFINED, line=stmt.lineno, body=tuple(body))]
        self.functions.append(PyFunction(name, tuple(inner), tuple(body)))

    def defined_test(self) -> str:
        """The run-time tests around the ``def`` being read, as one ``{=expr=}`` test."""
        tests = []
        for text, branch in self.guard_texts:
            found = TOKEN_TEXT.fullmatch(text)
            inner = f"({found[1]})" if found else UNKNOWN_NAME
            tests.append(inner if branch else f"not {inner}")
        return "{=" + " and ".join(tests) + "=}"

    def flow(self, stmt: ast.stmt, params: dict[str, str]) -> list[PyEvent] | None:
        """Control flow the planner follows: an ``if`` on run-time values, a ``for`` over a list, a glob or
        a directory, ``try`` and its handlers, ``raise``, ``break``, ``continue``, ``return``; None for
        other statements (read flat, as before)."""
        line = getattr(stmt, "lineno", 0)
        if isinstance(stmt, ast.If):  # a test on run-time values is kept; any other is opaque ("")
            test = self.runtime(stmt.test)
            argued = self.argument_test(stmt.test, params) if test is None else None
            if test is None and argued is None:
                argued = self.returned_test(stmt.test)
            if test is not None:
                self.guards.append((stmt.test, True))
                self.guard_texts.append((test, True))
            else:
                self.unsure_depth += 1
            body = self.block(stmt.body, params)
            if test is not None:
                self.guards[-1] = (stmt.test, False)
                self.guard_texts[-1] = (test, False)
            orelse = self.block(stmt.orelse, params)
            if test is not None:
                self.guards.pop()
                self.guard_texts.pop()
            else:
                self.unsure_depth -= 1
            own = self.calls(stmt, params)
            if test is not None:  # a call of the package's own code in a run-time test still runs
                own = [e for e in own if e.kind == "call" and e.target not in _BUILTIN_NAMES]
            kept = test or argued or ""
            top = self.package.split(".")[0]
            setup = self.setup(stmt.test) if _matters(body, top) or _matters(orelse, top) else ""
            return [*own, PyEvent("if", kept, line=line, body=tuple(body), orelse=tuple(orelse), setup=setup)]
        if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name):
            chosen = self.chosen(stmt.iter)
            if chosen is not None:  # a list chosen by a run-time test: one loop per branch
                test, first, second = chosen
                one = self.flow(ast.For(stmt.target, first, stmt.body, stmt.orelse, lineno=line), params)
                other = self.flow(ast.For(stmt.target, second, stmt.body, stmt.orelse, lineno=line), params)
                return [PyEvent("if", test, line=line, body=tuple(one or ()), orelse=tuple(other or ()))]
            loop = self.loop_items(stmt.iter, params)
            if loop is not None:
                api, items = loop
                inner = {**params, stmt.target.id: f"{{{stmt.target.id}}}"}
                self.loops.append(True)
                self.unsure_depth += 1
                body = self.block(stmt.body, inner)
                self.unsure_depth -= 1
                self.loops.pop()
                orelse = self.block(stmt.orelse, params)
                return [PyEvent("for", stmt.target.id, api, items, line, tuple(body), tuple(orelse))]
        if isinstance(stmt, ast.For) and (known := self.static_loop(stmt, params)) is not None:
            return known
        if isinstance(stmt, ast.For) and (computed := self.program_loop(stmt, params)) is not None:
            return computed
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):  # runs its body any number of times
            own = self.calls(stmt, params)
            self.loops.append(False)
            self.unsure_depth += 1
            body = self.block(stmt.body, params)
            self.unsure_depth -= 1
            self.loops.pop()
            orelse = self.block(stmt.orelse, params)  # whether it runs is as unknown as the body's runs
            return [*own, PyEvent("if", "", line=line, body=tuple(body), orelse=tuple(orelse))]
        if isinstance(stmt, ast.Try):
            body = self.block(stmt.body, params) + self.block(stmt.orelse, params)
            handlers = tuple(
                PyEvent(
                    "except", ",".join(catches(h.type)), line=h.lineno, body=tuple(self.handler(h, params))
                )
                for h in stmt.handlers
            )
            return [PyEvent("try", "", line=line, body=tuple(body), orelse=handlers),
                    *self.block(stmt.finalbody, params)]  # fmt: skip
        if isinstance(stmt, ast.Raise):
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            name = (self.dotted(exc) or "") if exc is not None else ""
            if isinstance(stmt.exc, ast.Name) and stmt.exc.id in self.handlers:
                name = ""  # ``except OSError as e: raise e``: the caught error again, as a bare raise
            message = ""
            if isinstance(stmt.exc, ast.Call) and stmt.exc.args:
                message = self.text(stmt.exc.args[0], params) or _UNKNOWN
            return [*self.calls(stmt, params), PyEvent("raise", message, name.rsplit(".", 1)[-1], line=line)]
        if isinstance(stmt, (ast.Break, ast.Continue)):  # kept for the loops the planner runs
            kind = "break" if isinstance(stmt, ast.Break) else "continue"
            return [PyEvent(kind, "", line=line)] if self.loops and self.loops[-1] else []
        if isinstance(stmt, ast.Return) and self.in_function:
            none = stmt.value is None or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
            return [*self.calls(stmt, params), PyEvent("return", "none" if none else "", line=line)]
        return None

    def handler(self, h: ast.ExceptHandler, params: dict[str, str]) -> list[PyEvent]:
        self.handlers.append(h.name or "")
        self.unsure_depth += 1
        try:
            return self.block(h.body, params)
        finally:
            self.unsure_depth -= 1
            self.handlers.pop()

    def setup(self, test: ast.expr) -> str:
        """The program that computes a top-level test from what the module computed before it
        (:mod:`abiprobe.binary.pyslice`); ``""`` inside functions, or when the test reads none of it."""
        if self.in_function or self.static is None or self.static.overlay:
            return ""
        return self.static.setup(test, self.seen_top, self.seen_block)

    def path_setup(self, path: ast.expr) -> str:
        """The program that computes a load's path this reading could not follow, run by the planner
        with the set's installed files (:func:`abiprobe.binary.pyslice.path_program`); ``""`` when the
        path reads the enclosing function's own names, or inside a loop unrolled here."""
        if self.static is None or self.loops:
            return ""
        local, prefix = self.fn_locals, self.fn_prefix
        if self.static.overlay:
            # in a loop unrolled here: the names it binds for this item, as the program's own assignments
            if self.in_function:
                return ""
            bound = self.static.literals()
            if bound is None:
                return ""
            trees = [parse_module(f"{k} = {v}") for k, v in bound.items()]
            if any(t is None for t in trees):
                return ""
            local, prefix = set(bound), [t.body[0] for t in trees if t is not None]
        program = path_program(path, self.seen_top, self.static.interp.env, local, prefix)
        return self._with_own_modules(program) if program else ""

    def _with_own_modules(self, program: str, marked: bool = False) -> str:
        """``program`` with the package's modules its relative imports name embedded before it
        (:data:`abiprobe.binary.pyinterp.MODULE_HOOK`: decord's and dgl's ``from . import libinfo``, then
        ``libinfo.find_lib_path()``), so the planner runs their search too; each module small enough,
        the whole at most :data:`_MAX_EMBEDDED` characters. ``marked``: each module's functions with their
        lines marked (:func:`abiprobe.binary.pyslice.marked_module`), for a call program."""
        top = self.package.split(".")[0]
        if self.pkg is None or ("from ." not in program and f"from {top}." not in program):
            return program
        tree = parse_module(program)
        if tree is None:
            return program
        embeds: list[str] = []
        for stmt in _imports_in(tree.body):
            if stmt.level:
                base = _absolute("." * stmt.level + (stmt.module or ""), self.package)
            elif (stmt.module or "").startswith(f"{top}."):  # the package's own module, named in full
                base = str(stmt.module)
            else:
                continue
            for name in (f"{base}.{a.name}" for a in stmt.names) if not stmt.module else [base]:
                path = self.pkg.paths.get(name)
                if path is None or path == self.path:
                    continue
                try:
                    text = self.pkg.sources[path].decode()
                except UnicodeDecodeError:
                    continue
                if marked:
                    module_tree = self.pkg.tree(name)
                    if module_tree is None:
                        continue
                    text = marked_module(module_tree)
                embeds.append(f"{MODULE_HOOK}({path!r}, {text!r})")
        out = "\n".join([*dict.fromkeys(embeds), program])
        return out if len(out) <= _MAX_EMBEDDED else program

    def returned_test(self, test: ast.expr) -> str | None:
        """``returned:<line>:none`` for ``name is None`` where ``name`` holds what the call of the
        package's own function at that line returned (``:value`` for ``is not None``): the planner takes
        the branch by how the call returned (a try-list helper that returns None once every candidate
        failed); None for any other test."""
        if not (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.left, ast.Name)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
        ):
            return None
        line = self.returned_by.get(test.left.id)
        if line is None:
            return None
        return f"returned:{line}:{'none' if isinstance(test.ops[0], ast.Is) else 'value'}"

    def argument_test(self, test: ast.expr, params: dict[str, str]) -> str | None:
        """A function's test on its own parameters (and run-time values): ``if not no_throw: raise``,
        kept as ``{=...=}`` with each parameter as ``__abiprobe_arg_<name>`` (the planner puts in what a
        call passed; a test on a parameter no call passed stays opaque)."""
        if not self.in_function:
            return None
        names = {p for p in params if p not in self.local_nodes}

        def local(name: str) -> ast.expr | None:
            if name in self.local_nodes:
                return self.local_nodes[name]
            if name in names:
                return ast.Name(f"{ARG_PREFIX}{name}", ast.Load())
            return self.module_nodes.get(name)

        text = runtime_text(test, self.dotted, local, frozenset(f"{ARG_PREFIX}{n}" for n in names))
        return None if text is None or ARG_PREFIX not in text else f"{{={text}=}}"

    def static_loop(self, stmt: ast.For, params: dict[str, str]) -> list[PyEvent] | None:
        """A top-level loop over a value known at facts time (a list of the module, a dict read from a
        file of the wheel): a list of strings is a ``for`` the planner runs; other items are unrolled
        (each item's names bound while its body is read) unless the body breaks out of the loop."""
        if self.in_function or self.static is None:
            return None
        items = self.static.items(stmt.iter)
        if items is None:
            return None
        line = stmt.lineno
        if isinstance(stmt.target, ast.Name) and all(isinstance(i, str) for i in items):
            body, orelse = self._loop_blocks(stmt, stmt.target.id, params)
            return [PyEvent("for", stmt.target.id, "", tuple(items), line, body, orelse)]
        if _jumps(stmt.body):
            return None
        saved = dict(self.static.overlay)
        events: list[PyEvent] = []
        self.unsure_depth += 1
        try:
            for item in items:
                names = self.static.bind(stmt.target, item)
                if names is None:
                    return None
                events += self.block(stmt.body, {**params, **names})
                self.static.overlay = dict(saved)
        finally:
            self.static.overlay = saved
            self.unsure_depth -= 1
        return events + self.block(stmt.orelse, params)

    def program_loop(self, stmt: ast.For, params: dict[str, str]) -> list[PyEvent] | None:
        """A loop of the module's top level or of a function's body over a list that the statements
        before it compute (``site_packages = [...]; site_packages += site.getsitepackages()``): a ``for``
        whose items the planner computes by running that program (api ``program``, the program its
        ``setup``), and runs as an opaque loop when it cannot. None for any other loop."""
        unrolled = self.static is not None and bool(self.static.overlay) and not self.in_function
        if (stmt is not self.current and not unrolled) or not isinstance(stmt.target, ast.Name) or self.loops:
            return None
        program = self.path_setup(stmt.iter)
        if not program:
            return None
        body, orelse = self._loop_blocks(stmt, stmt.target.id, params)
        return [
            *self.calls(stmt, params),
            PyEvent("for", stmt.target.id, "program", (), stmt.lineno, body, orelse, setup=program),
        ]

    def _loop_blocks(
        self, stmt: ast.For, name: str, params: dict[str, str]
    ) -> tuple[tuple[PyEvent, ...], tuple[PyEvent, ...]]:
        """A loop's body read once with its name a placeholder the planner binds per item (``{name}``),
        and its ``else``."""
        self.loops.append(True)
        self.unsure_depth += 1
        body = self.block(stmt.body, {**params, name: f"{{{name}}}"})
        self.unsure_depth -= 1
        self.loops.pop()
        return tuple(body), tuple(self.block(stmt.orelse, params))

    def argument(self, node: ast.expr, params: dict[str, str]) -> str:
        """A call's argument as the text the planner binds to the callee's parameter: a string, a value
        known at facts time, a path or name built from the caller's own parameters; ``""`` otherwise."""
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else ""
        if not self.in_function and self.static is not None:
            known = self.static.argument(node)
            if known is not None:
                return known
        if isinstance(node, (ast.Starred, ast.Lambda)):
            return ""
        text = self.text(node, params)
        if text is not None and _UNKNOWN not in text:
            return text
        # a path in the package, followed only in code that loads by path (abiprobe.binary.pyreturns)
        return self.package_path(node, params) if self.pkg is not None and self.pkg.active else ""

    def guarded(self, value: ast.expr, before: ast.expr | None, name: str = "") -> ast.expr:
        """An assignment under run-time tests, as the value it leaves: ``value if test else before`` (in
        a test, the name assigned is the value it had before: ``if not path.exists(): path = ...``)."""
        for test, branch in reversed(self.guards):
            other = before if before is not None else ast.Constant(None)
            if name and before is not None:
                test = replace_name(test, name, before)
            value = ast.IfExp(test, value, other) if branch else ast.IfExp(test, other, value)
        return value

    def chosen(self, node: ast.expr) -> tuple[str, ast.expr, ast.expr] | None:
        """``(test, one, other)`` for a loop's iterable that a run-time test chose between two values."""
        if isinstance(node, ast.Name):
            node = (self.local_nodes if self.in_function else {}).get(node.id) or self.module_nodes.get(
                node.id, node
            )
        if isinstance(node, ast.IfExp) and (test := self.runtime(node.test)) is not None:
            return test, node.body, node.orelse
        return None

    def loop_items(
        self, node: ast.expr, params: dict[str, str], seen: frozenset[str] = frozenset()
    ) -> tuple[str, tuple[str, ...]] | None:
        """What a ``for`` iterates: ``("", names)`` for a list of strings, ``("glob", (pattern,))`` for a
        glob's matches, ``("listdir", (directory,))`` for a directory's entries; None otherwise. A name is
        followed to its assignment once (``files = sorted(files)`` is no loop of its own)."""
        if isinstance(node, ast.Name):
            if node.id in seen:
                return None
            seen = seen | {node.id}
        if isinstance(node, ast.Name) and node.id in (self.local_nodes if self.in_function else {}):
            node = self.local_nodes[node.id]
        elif isinstance(node, ast.Name) and node.id in self.module_nodes:
            node = self.module_nodes[node.id]
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [
                str(e.value)
                if isinstance(e, ast.Constant) and isinstance(e.value, int)
                else self.text(e, params)
                for e in node.elts
            ]
            return None if any(i is None for i in items) else ("", tuple(i for i in items if i is not None))
        callee = self.dotted(node.func) if isinstance(node, ast.Call) else None
        if isinstance(node, ast.Call) and callee in ("os.listdir", "sorted", "list") and node.args:
            if callee == "os.listdir":
                folder = self.path_of(node.args[0], params)
                return None if folder is None else ("listdir", (folder,))
            return self.loop_items(node.args[0], params, seen)
        pattern = self.path_of(node, params) if isinstance(node, ast.Call) else None
        if pattern is not None and "*" in pattern:
            return ("glob", (pattern,))
        return None

    def runtime(self, node: ast.expr) -> str | None:
        """``{=expr=}`` for an expression built only from constants and the run-time values the set and
        the target fix (:data:`RUNTIME_ROOTS`), through the module's and the function's assignments."""

        def local(name: str) -> ast.expr | None:
            if name in self.unsure:  # assigned where abiprobe cannot say whether it ran
                return ast.Name(UNKNOWN_NAME, ast.Load())
            if self.in_function and name in self.local_nodes:
                return self.local_nodes[name]
            if name in self.module_nodes:
                return self.module_nodes[name]
            return None

        # calls stand for what they give only where the module loads by path (the others, most of a
        # wheel's modules, keep the cheap answer of a test that reads no run-time value)
        follows = self.pkg is not None and self.pkg.may_follow()
        hook = (lambda n: exists_test(self, n) or returned_expr(self, n)) if follows else None
        text = runtime_text(node, self.dotted, local, call=hook)
        return None if text is None else f"{{={text}=}}"

    def calls(self, stmt: ast.stmt, params: dict[str, str]) -> list[PyEvent]:
        """Load calls, dynamic imports and function calls in one statement's own expressions."""
        out: list[PyEvent] = []
        for node in _own_calls(stmt):
            callee = self.dotted(node.func)
            if callee is None:
                continue
            api = _load_api(callee)
            if (
                callee in ("importlib.util.spec_from_file_location", "spec_from_file_location")
                and len(node.args) > 1
            ):
                # an extension module imported from a path: the path, else the module name it is given
                target = self.path_of(node.args[1], params) or self.by_name(node.args[1], params)
                target = target or self.by_name(node.args[0], params)
                if target is not None:
                    out.append(
                        PyEvent("load", target, "importlib.util.spec_from_file_location", line=node.lineno)
                    )
            elif api is not None and node.args:
                if self.pkg is not None:
                    self.pkg.unfollowed = ""
                target = self.path_of(node.args[0], params)
                searched = _system_search(self._assigned(node.args[0]))
                expr = "" if target is not None or searched else ast.unparse(node.args[0])
                if target is not None and "{=" in target:
                    # computed from run-time values: kept, so a value the planner cannot compute (or a part
                    # abiprobe could not follow) makes the load unknown, not silently nothing
                    expr = ast.unparse(node.args[0])
                if expr and self.pkg is not None and self.pkg.unfollowed:  # the return it stopped at
                    expr = f"{expr}\n{self.pkg.unfollowed}"
                target = target or self.by_name(node.args[0], params) or ""
                setup = self.path_setup(node.args[0]) if expr else ""
                out.append(PyEvent("load", target, api, line=node.lineno, expr=expr, setup=setup))
            elif callee in ("importlib.import_module", "__import__") and node.args:
                target = self.module_of(node.args[0], node.args[1:], params)
                out.append(PyEvent("import", target, callee, line=node.lineno))
            elif self.cls is not None and re.fullmatch(r"self\.\w+", callee):  # a method of its own class
                bound = () if f"{self.cls}.{callee[5:]}" in self.static_methods else ("",)  # self
                args = (*bound, *(self.argument(a, params) for a in node.args))
                out.append(
                    PyEvent("call", f"{self.module}.{self.cls}.{callee[5:]}", args=args, line=node.lineno)
                )
            elif "." not in callee or callee.startswith(self.package.split(".")[0] + "."):
                builtin = "." not in callee and callee in _BUILTIN_NAMES
                args = tuple("" if builtin else self.argument(a, params) for a in node.args)
                program = self.call_setup(node, callee)
                out.append(PyEvent("call", callee, args=args, line=node.lineno, setup=program))
        return out

    def call_setup(self, node: ast.Call, callee: str) -> str:
        """The program running a call, at import, of one of the module's own functions that loads a
        library (:func:`abiprobe.binary.pyslice.call_program`), for the planner to run on the set's files;
        ``""`` for any other call."""
        if self.in_function or self.loops or self.static is None or self.static.overlay:
            return ""
        if isinstance(node.func, ast.Name) and callee == f"{self.module}.{node.func.id}":
            if not self.loads(node.func.id):
                return ""
            return self.static.call(node, self.seen_top, self.seen_block)
        # a function of another module of the package (``from ._loader import load; load()``), that
        # module's source naming a load call: the program embeds the module, its lines marked
        owner, _, fname = callee.rpartition(".")
        path = self.pkg.paths.get(owner) if self.pkg is not None else None
        if self.pkg is None or path is None or path == self.path or self.pkg.function(owner, fname) is None:
            return ""
        if not any(m in self.pkg.sources[path] for m in _LOAD_MARKERS):
            return ""
        program = self.static.call(node, self.seen_top, self.seen_block)
        return self._with_own_modules(program, marked=True) if program else ""

    def loads(self, name: str, seen: frozenset[str] = frozenset()) -> bool:
        """Whether the module's function ``name`` loads a library, itself or through another of the
        module's functions it calls."""
        if name in self._loading:
            return self._loading[name]
        function = next((f for f in self.functions if f.name == name), None)
        if function is None or name in seen:
            return False
        own = f"{self.module}."
        found = any(
            e.kind == "load"
            or (
                e.kind == "call"
                and e.target.startswith(own)
                and self.loads(e.target[len(own) :], seen | {name})
            )
            for e in all_events(function.events)
        )
        self._loading[name] = found
        return found

    def _assigned(self, node: ast.expr) -> ast.expr:
        """The expression a plain name was last assigned (the function's, else the module's), else ``node``
        (``name = find_library("dl") or "libdl.so.2"; CDLL(name)`` is the system's search)."""
        if isinstance(node, ast.Name):
            value = self.local_nodes.get(node.id) if self.in_function else None
            return value or self.module_nodes.get(node.id) or node
        return node

    def package_path(self, node: ast.expr, params: dict[str, str]) -> str:
        """A call's argument that is a path in the package, as its callee's parameter gets it (``""`` for
        anything else)."""
        if not isinstance(node, (ast.Name, ast.Call, ast.BinOp, ast.JoinedStr, ast.Attribute)):
            return ""
        path = self.path_of(node, params)
        return (
            path
            if path is not None and "/" in path and path.split("/", 1)[0] == self.path.split("/", 1)[0]
            else ""
        )

    def by_name(self, node: ast.expr, params: dict[str, str]) -> str | None:
        """A path expression that cannot be evaluated, matched by the last name it spells (a constant or a
        parameter, through the function's assignments): ``_get_extension_path("_C")`` -> ``**/_C.*so*``."""
        names: list[str] = []
        todo = [node]
        while todo:
            n = todo.pop(0)
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                names.append(n.value.rsplit("/", 1)[-1])
            elif isinstance(n, ast.Name) and n.id in params:
                names.append(params[n.id])
            elif isinstance(n, ast.Name) and n.id in self.local_nodes:
                todo.append(self.local_nodes.pop(n.id))
            elif isinstance(n, ast.IfExp) and (test := self.runtime(n.test)) is not None:
                first, second = self.by_name(n.body, params), self.by_name(n.orelse, params)
                if first is None or second is None or first == second:
                    return first or second
                return f"{{=({first!r} if {test[2:-2]} else {second!r})=}}"  # the planner picks one
            elif isinstance(n, ast.Attribute) and _root_name(n) in params:
                continue  # ``args.path``: an attribute of an argument, not the name the argument spells
            else:
                todo.extend(c for c in ast.iter_child_nodes(n) if isinstance(c, ast.expr))
        stems = [
            n.split(".so")[0] for n in names if re.fullmatch(r"[\w.{}-]+", n) and n not in ("", ".", "..")
        ]
        # a file-name glob it spells (``"common_ops.*"``) names the file better than a directory does
        globbed = [m.group(1) for n in names if (m := re.fullmatch(r"([A-Za-z_][\w-]*)\.\*", n))]
        top = self.path.split("/", 1)[0]
        stem = globbed[0] if globbed else (stems[-1] if stems else None)
        return f"{top}/**/{stem}.*so*" if stem else None

    def dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def module_of(self, node: ast.expr, rest: list[ast.expr], params: dict[str, str]) -> str:
        text = self.text(node, params)
        if text is None:
            return _UNKNOWN
        if (
            text.startswith(".")
            and rest
            and isinstance(rest[0], ast.Constant)
            and isinstance(rest[0].value, str)
        ):
            return _absolute(text, rest[0].value.lstrip("."))
        return _absolute(text, self.package) if text.startswith(".") else text

    def text(self, node: ast.expr, params: dict[str, str]) -> str | None:
        """A string expression with unknown parts as ``*`` and parameters as ``{name}``."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in params:
                return params[node.id]
            local = self.local_nodes.pop(node.id, None)  # popped while read: no cycles
            if local is not None:
                try:
                    return self._path(local, params)
                finally:
                    self.local_nodes[node.id] = local
            constant = self.constants.get(node.id)
            if constant is None:
                constant = imported_value(self, node.id)
            return constant if constant is not None else self.known_text(node) or self.runtime(node)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.FormattedValue):
                    value = self.text(v.value, params) if v.format_spec is None else None
                    parts.append(value or self.runtime(ast.JoinedStr([v])) or _UNKNOWN)
                else:
                    parts.append(self.text(v, params) or "")
            return "".join(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.text(node.left, params), self.text(node.right, params)
            if left is not None and right is not None:
                return left + right
        return self.known_text(node) or self.runtime(node)

    def known_text(self, node: ast.expr) -> str | None:
        """A string the module's top level computed from what is known at facts time (a name read from
        a JSON file of the wheel); None elsewhere."""
        if self.in_function or self.static is None:
            return None
        value = self.static.value(node)
        return value if isinstance(value, str) and "{" not in value and "*" not in value else None

    def _choice(self, node: ast.IfExp, params: dict[str, str]) -> str | None:
        """``a if test else b`` on a run-time test: ``{=(a if test else b)=}`` for the planner."""
        test = self.runtime(node.test)
        if test is None:
            return None
        first, second = self._path(node.body, params), self._path(node.orelse, params)
        if first in (None, _UNKNOWN) and second in (None, _UNKNOWN):
            return None
        # a branch abiprobe cannot follow: unknown when the target takes it (the planner says so)
        one, other = (
            UNKNOWN_NAME if v in (None, _UNKNOWN) else as_expr(normal_path(v)) for v in (first, second)
        )
        if one == other:
            return normal_path(first)  # type: ignore[arg-type]
        return f"{{=({one} if ({test[2:-2]}) else {other})=}}"

    def path_of(self, node: ast.expr, params: dict[str, str]) -> str | None:
        """An installed path (relative to site-packages) a path expression evaluates to, or None."""
        value = self._path(node, params)
        if value is None or value == _UNKNOWN:
            return None
        return normal_path(value)

    def _path(self, node: ast.expr, params: dict[str, str]) -> str | None:
        if isinstance(node, ast.Call):
            callee = self.dotted(node.func) or ""
            args = node.args
            short = node.func.attr if isinstance(node.func, ast.Attribute) else callee.rsplit(".", 1)[-1]
            if callee in ("os.path.join", "posixpath.join") or short == "joinpath":
                parts = [self._path(a, params) for a in args]
                if short == "joinpath" and isinstance(node.func, ast.Attribute):
                    parts = [self._path(node.func.value, params), *parts]
                return None if any(p is None for p in parts) else posixpath.join(*parts)  # type: ignore[arg-type]
            if callee in ("os.path.dirname", "posixpath.dirname") and args:
                inner = self._path(args[0], params)
                return None if inner is None else _parent(inner)
            if callee in ("pathlib.Path", "Path", "pathlib.PurePath", "pathlib.PosixPath") and args:
                parts = [self._path(a, params) for a in args]  # ``Path(a, b)`` is ``Path(a) / b``
                return None if any(p is None for p in parts) else posixpath.join(*parts)  # type: ignore[arg-type]
            if callee in ("os.path.abspath", "os.path.realpath", "os.path.normpath", "os.fspath", "str",
                          "os.path.expanduser") and args:  # fmt: skip
                return self._path(args[0], params)
            if short in ("resolve", "absolute") and isinstance(node.func, ast.Attribute):
                return self._path(node.func.value, params)
            if (
                short in ("glob", "rglob")
                and callee != "glob.glob"
                and isinstance(node.func, ast.Attribute)
                and args
            ):
                base, pattern = self._path(node.func.value, params), self.text(args[0], params)
                if base is None or pattern is None:
                    return None
                return posixpath.join(base, "**" if short == "rglob" else "", pattern).replace(
                    "/**//", "/**/"
                )
            if callee in ("list", "sorted", "tuple", "iter", "next", "glob.glob") and args:
                return self._path(args[0], params)  # a glob's matches: any one of them
            if callee in ("os.environ.get", "os.getenv") and len(args) > 1:
                return self._path(args[1], params)  # an override the target does not set: the default
            method = node.func.attr if isinstance(node.func, ast.Attribute) else ""
            if method in ("with_suffix", "with_name") and isinstance(node.func, ast.Attribute) and args:
                base, part = self._path(node.func.value, params), self.text(args[0], params)
                if base is None or part is None:
                    return None
                head, _, name = base.rpartition("/")
                name = part if method == "with_name" else posixpath.splitext(name)[0] + part
                return f"{head}/{name}" if head else name
            if method == "as_posix" and isinstance(node.func, ast.Attribute):
                return self._path(node.func.value, params)
            return self.runtime(node) or returned_path(self, node, params)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and not (isinstance(node.value, ast.Attribute) and node.value.attr == "parents")
        ):
            whole = self.runtime(node)  # ``version.split(".")[0]``: a run-time value, not a glob's match
            return whole if whole is not None else self._path(node.value, params)  # one of a glob's matches
        if isinstance(node, ast.IfExp):
            branch = _posix_branch(node)
            return self._choice(node, params) if branch is None else self._path(branch, params)
        if isinstance(node, ast.Attribute) and node.attr == "origin":
            return file_finder_origin(self, node, params)
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self._path(node.value, params)
            return None if inner is None else _parent(inner)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "parents"
        ):
            inner = self._path(node.value.value, params)
            if (
                inner is None
                or not isinstance(node.slice, ast.Constant)
                or not isinstance(node.slice.value, int)
            ):
                return None
            for _ in range(node.slice.value + 1):
                inner = posixpath.dirname(inner)
            return inner
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left, right = self._path(node.left, params), self._path(node.right, params)
            return None if left is None or right is None else posixpath.join(left, right)
        return self.text(node, params)


_BUILTIN_NAMES = frozenset(dir(builtins))
ARG_PREFIX = "__abiprobe_arg_"  # a function's parameter in a kept test (abiprobe.analyze.units binds it)


_PLACEHOLDER = re.compile(r"\{\w+\}")


def _load_api(callee: str) -> str | None:
    """The load API a call's dotted name is (``ctypes.CDLL``, ``torch.ops.load_library``), else None."""
    api = LOAD_APIS.get(callee) or LOAD_APIS.get(callee.replace("cdll.LoadLibrary", "cdll"))
    if callee.endswith(("ops.load_library", "classes.load_library")):
        api = api or f"torch.{callee.rsplit('.', 2)[-2]}.load_library"
    return api


def _imports_in(body: list[ast.stmt]) -> list[ast.ImportFrom]:
    """The ``from X import ...`` statements of a program's top level and of its ``try`` blocks
    (``try: from pkg.version import __target__ except Exception: ...``)."""
    out: list[ast.ImportFrom] = []
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom):
            out.append(stmt)
        elif isinstance(stmt, ast.Try):
            out += _imports_in(stmt.body)
    return out


def _parent(path: str) -> str:
    """The folder of a path text; of a parameter's whole value (``{folder}``) or of ``..``, the folder
    above it (``{folder}/..``: what the parameter holds is known only when a call binds it)."""
    last = path.rsplit("/", 1)[-1]
    if _PLACEHOLDER.fullmatch(last) or last == "..":
        return f"{path}/.."
    return posixpath.dirname(path)


def _matters(events: list[PyEvent], top: str) -> bool:
    """Whether a branch loads, calls the package's code, raises, or imports a module of the package."""
    return any(
        e.kind in ("load", "raise")
        or (e.kind == "call" and e.target not in _BUILTIN_NAMES)
        or (e.kind == "import" and e.target.split(".")[0] == top)
        for e in all_events(tuple(events))
    )


def _root_name(node: ast.Attribute) -> str | None:
    """``a`` of ``a.b.c``; None when the chain starts at no plain name (a call, a subscript)."""
    value: ast.expr = node
    while isinstance(value, ast.Attribute):
        value = value.value
    return value.id if isinstance(value, ast.Name) else None


def _jumps(body: list[ast.stmt]) -> bool:
    """Whether ``body`` has a ``break`` or ``continue`` of the loop it is the body of."""
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Break, ast.Continue)):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            todo.extend(node.orelse)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.expr)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def _system_search(node: ast.expr) -> bool:
    """``CDLL(None)`` or ``CDLL(ctypes.util.find_library("gomp"))``: the system's own search, no claim."""
    text = ast.unparse(node)
    return text == "None" or "find_library(" in text


def _bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement runs where it stands (not those of a def)."""
    if isinstance(stmt, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.Try):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    if isinstance(stmt, (ast.With, ast.AsyncWith, ast.ClassDef)):
        return [stmt.body]
    return []


def _posix_branch(node: ast.IfExp) -> ast.expr | None:
    """The branch a Linux host takes in ``".pyd" if os.name == "nt" else ".so"``; None when the test is
    about something else."""
    test = ast.unparse(node.test)
    m = re.fullmatch(r"(?:os\.name|sys\.platform|platform\.system\(\))\s*(==|!=)\s*['\"](\w+)['\"]", test)
    if m is None:
        return None
    linux = m.group(2) in ("posix", "linux", "Linux")
    return node.body if (m.group(1) == "==") == linux else node.orelse


def _type_checking_or_main(test: ast.expr) -> bool:
    text = ast.unparse(test)
    return text in (
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
        "__name__ == '__main__'",
        '__name__ == "__main__"',
    )


def _own_calls(stmt: ast.stmt) -> list[ast.Call]:
    """The calls among one statement's own expression nodes (not those of the statements, lambdas or
    handlers nested in it), in the order of a depth-first walk that visits the last child first; found
    once per statement (a function's flow visits a statement once per path through it)."""
    found: list[ast.Call] | None = getattr(stmt, "_abiprobe_calls", None)
    if found is None:
        found = []
        todo: list[ast.AST] = [stmt]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Call):
                found.append(node)
            for name in node._fields:  # ast.iter_child_nodes, without its generators
                value = getattr(node, name, None)
                if isinstance(value, list):
                    todo.extend(v for v in value if isinstance(v, ast.AST) and not isinstance(v, _NOT_OWN))
                elif isinstance(value, ast.AST) and not isinstance(value, _NOT_OWN):
                    todo.append(value)
        stmt._abiprobe_calls = found  # type: ignore[attr-defined]
    return found


# nodes whose expressions are not the statement's own, and leaves that hold no call
_NOT_OWN = (ast.stmt, ast.Lambda, ast.ExceptHandler, ast.expr_context, ast.operator, ast.boolop, ast.unaryop,
            ast.cmpop, ast.Constant, ast.Name)  # fmt: skip
