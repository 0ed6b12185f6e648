"""A small, bounded interpreter of the plain Python a package computes values with before it loads
native code: assignments, ``if``, ``for`` / ``while`` with ``break`` and ``continue``, ``try`` with its
handlers, the package's own functions, comprehensions, and a fixed set of pure library calls (string and
container methods, ``re``, ``json``, ``os.path``, ``pathlib``, ``packaging.version``).

Nothing is run for real. Two things come from outside, each through a callback: a value the set and the
target fix (``lookup``: ``torch.__version__``, ``importlib.metadata.version``; abiprobe.analyze.runtime) and
the bytes of a file of the wheel (``read``: ``json.load(open(path))``, ``Path.read_text()``, at facts time
only). ``files`` are the paths the code may test and list: the wheel's at facts time; with ``site``, the
whole set's installed paths relative to site-packages (at plan time), and then the site-packages folder
itself is known (``"."``: ``sysconfig.get_paths()["purelib"]``, ``importlib.util.find_spec``'s origin, a
folder's listing through ``Path.iterdir``, ``os.path.isdir``, ``site.getsitepackages()``; a path may
leave it for the environment's prefix: ``Path(site).parent.parent`` is ``../..``, ``<prefix>/lib``).
Anything else (an unknown call, a name nothing binds, a file outside the wheel, a loop or a recursion
past its bound) is :class:`Unknown`, never a guess; the package's own exceptions (``raise
ValueError(...)``, a ``KeyError``, a file the wheel lacks) are raised as :class:`Raised` and caught by
the package's handlers as Python would.
"""

from __future__ import annotations

import ast
import builtins
import json
import operator
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator
from fnmatch import fnmatchcase
from typing import Any

from packaging.version import InvalidVersion, Version

from abiprobe.binary.pyparse import parse_module
from abiprobe.binary.wheel_members import in_prefix, site_relative

MAX_STEPS = 20_000
MAX_DEPTH = 12
MAX_TEXT = 4096  # the longest string a regular expression is applied to
MAX_ITEMS = 4096


class Unknown(Exception):
    """The value depends on something the interpreter does not know (the message says what)."""


class Raised(Exception):
    """An exception the package's code itself raises (``name``: its class), caught by its handlers."""

    def __init__(self, name: str, message: str = "", kinds: frozenset[str] = frozenset()) -> None:
        super().__init__(f"{name}: {message}" if message else name)
        self.name, self.message = name, message
        self.line = 0  # the package's own ``raise``: its line, where a program marks it (LINE_HOOK)
        self.path = ""  # and the module it is in
        # the class's own name and its bases' (a package's ``class NotFound(OSError)``), for handlers
        self.kinds = kinds or frozenset({name.rsplit(".", 1)[-1]})


class _Class:
    """An exception class the package defines (``class LibraryNotFound(Exception): pass``): the name
    Python prints for it (``pkg.mod.LibraryNotFound``) and the names a handler may catch it by."""

    def __init__(self, qualified: str, kinds: frozenset[str]) -> None:
        self.qualified, self.kinds = qualified, kinds


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class Ref:
    """A dotted name bound by an import (``torch``, ``os.path.join``): resolved when used."""

    def __init__(self, dotted: str) -> None:
        self.dotted = dotted

    def __repr__(self) -> str:
        return f"<{self.dotted}>"


# ``sys.base_prefix`` at plan time: the interpreter the environment was made from, outside it
BASE_PREFIX = "/<base-prefix>"
_MAX_PARENTS = 8  # of ``Path.parents``: far enough up from any file of a package to leave the prefix


class PackagePath:
    """A ``pathlib`` path inside site-packages (``pkg/sub``), relative like every installed path."""

    def __init__(self, path: str) -> None:
        self.path = site_relative(path)  # ``../..`` is the prefix's ``lib``, one spelling per file

    def __repr__(self) -> str:
        return f"Path({self.path!r})"

    def __str__(self) -> str:
        return self.path

    def __fspath__(self) -> str:  # ``os.path.realpath(path)`` of a ``pathlib`` path
        return self.path

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PackagePath) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)


class Opaque:
    """A value the interpreter could not compute (a branch on a value it does not know chose it), kept
    where it stands inside a container: reading it is :class:`Unknown`, carrying it is not."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<unknown: {self.why}>"


class _Spec:
    """What ``importlib.util.find_spec`` gives for a module of the set (site mode)."""

    def __init__(self, name: str, origin: str | None, locations: list[str] | None) -> None:
        self.name, self.origin, self.locations = name, origin, locations


class _SitePaths(dict[str, str]):
    """``sysconfig.get_paths()`` in site mode: the library folders are site-packages; another key
    (``scripts``, ``include``) is a folder outside the set, not known."""

    def __missing__(self, key: str) -> str:
        raise Unknown(f"sysconfig's {key!r} folder")


class _Function:
    def __init__(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: dict[str, Any]) -> None:
        self.node, self.scope = node, scope


class _Module:
    """Another module of the package, run by the interpreter from the source a program embeds
    (:data:`MODULE_HOOK`): its namespace, in which its functions run."""

    def __init__(self, path: str, env: dict[str, Any]) -> None:
        self.path, self.env = path, env


# ``__abiprobe_module__("pkg/_ffi/libinfo.py", "<source>")`` in a program: run that module of the package
# (its own ``__file__``), so that ``from . import libinfo`` there binds it (abiprobe.binary.pysource)
MODULE_HOOK = "__abiprobe_module__"
# ``__abiprobe_line__(N)`` before a statement of a program: the line of the package's source it stands for
# (a program's own lines are not the module's), for the loads and raises a call program records
LINE_HOOK = "__abiprobe_line__"
# the calls that load a library by name or path, as the interpreter runs them when it is given a ``decide``
LOAD_CALLS = {
    "ctypes.CDLL": "ctypes.CDLL", "ctypes.cdll.LoadLibrary": "ctypes.cdll.LoadLibrary",
    "ctypes.PyDLL": "ctypes.CDLL", "ctypes.LibraryLoader.LoadLibrary": "ctypes.cdll.LoadLibrary",
    "torch.ops.load_library": "torch.ops.load_library",
    "torch.classes.load_library": "torch.classes.load_library",
}  # fmt: skip
# the calls made for their effect only whose failure to be followed changes nothing a load depends on
_HARMLESS_EFFECTS = frozenset(
    {"logging", "logger", "log", "_logger", "LOGGER", "_LOGGER", "warnings", "print"}
)
# site-packages' parents up to the environment's prefix, and the prefix's ``bin``, as site-relative paths
_PREFIX_FOLDERS = frozenset({"..", "../..", "../../..", "../../../bin"})
_RESOURCE_FILES = frozenset({"importlib.resources.files", "importlib_resources.files"})
_AS_FILE = frozenset({"importlib.resources.as_file", "importlib_resources.as_file"})
_OS_ERROR = frozenset({"OSError", "IOError", "EnvironmentError", "Exception", "BaseException"})
_SMALL_MODULE = 4096  # bytes of a module of the wheel an import runs when no program embedded it


class _File:
    def __init__(self, text: str) -> None:
        self.text = text


class _Context:
    """A context manager whose ``__enter__`` gives ``value`` (``importlib.resources.as_file`` of a file
    installed as a real file: the path itself)."""

    def __init__(self, value: Any) -> None:
        self.value = value


class _ExitStack:
    """``contextlib.ExitStack()``: ``enter_context`` gives what the context manager's ``__enter__``
    gives; what it runs on exit (at interpreter exit, for a module's own stack) decides nothing here."""


class Handle:
    """What a load call returns in a program run with a ``decide`` (a library the loader opened): it can
    be kept and passed on; reading anything of it (a symbol) is :class:`Unknown`."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"<library {self.path}>"


_CATCH_ALL = frozenset({"Exception", "BaseException"})
# Python's own exception classes, each with the names of the classes it derives from (its handlers)
_EXCEPTIONS = {
    n: frozenset(c.__name__ for c in cls.__mro__ if c is not object)
    | (frozenset({"IOError", "EnvironmentError"}) if issubclass(cls, OSError) else frozenset())
    for n in dir(builtins)
    if isinstance(cls := getattr(builtins, n), type) and issubclass(cls, BaseException)
}
_ERROR_BASES = {
    "FileNotFoundError": {"OSError", "IOError", "EnvironmentError"},
    "KeyError": {"LookupError"},
    "IndexError": {"LookupError"},
    "ZeroDivisionError": {"ArithmeticError"},
    "StopIteration": set(),
    "InvalidVersion": {"ValueError"},
    "JSONDecodeError": {"ValueError"},
}
_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv, ast.BitOr: operator.or_, ast.BitAnd: operator.and_,
}  # fmt: skip
COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}  # fmt: skip
_PURE_TYPES = (str, int, float, bool, type(None), list, tuple, dict, set, frozenset, Version, PackagePath)
_STR_METHODS = frozenset({
    "startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "replace", "lower", "upper",
    "join", "format", "partition", "rpartition", "count", "find", "rfind", "isdigit", "removeprefix",
    "removesuffix", "splitlines", "index",
})  # fmt: skip
_CONTAINER_METHODS = frozenset({"get", "items", "keys", "values", "index", "count", "copy"})
_MUTATING = frozenset({
    "append", "extend", "insert", "pop", "update", "setdefault", "add", "remove", "clear", "sort", "reverse",
})  # fmt: skip


# a group with a quantifier inside that is itself quantified (``(a+)+``): backtracking that can take
# exponential time, never run
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]")


def _regex(name: str) -> Callable[..., Any]:
    def call(pattern: str, text: str, *rest: Any) -> Any:
        if not isinstance(pattern, str) or not isinstance(text, str) or len(text) > MAX_TEXT:
            raise Unknown(f"re.{name} of a value abiprobe does not apply it to")
        if len(pattern) > 512 or _NESTED_QUANTIFIER.search(pattern):
            raise Unknown(f"re.{name} with a pattern abiprobe does not run")
        return getattr(re, name)(pattern, text, *rest)

    return call


def _version(text: Any) -> Version:
    try:
        return Version(str(text))
    except InvalidVersion:
        raise Raised("InvalidVersion", f"Invalid version: {text!r}") from None


def _module_hook(node: ast.expr) -> tuple[str, str] | None:
    """``(path, source)`` of a :data:`MODULE_HOOK` call of two string constants, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == MODULE_HOOK
        and len(node.args) == 2
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
    ):
        return node.args[0].value, node.args[1].value  # type: ignore[attr-defined]
    return None


def _line_hook(node: ast.expr) -> int | None:
    """The line of a :data:`LINE_HOOK` call of one integer constant, else None."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == LINE_HOOK
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, int)
    ):
        return node.args[0].value
    return None


def _expanduser(path: str) -> str:
    if not isinstance(path, str) or path.startswith("~"):
        raise Unknown("a path in the user's home")
    return path


def _builtins() -> dict[str, Any]:
    def _range(*a: int) -> range:
        r = range(*a)
        if len(r) > MAX_ITEMS:
            raise Unknown("a range longer than abiprobe follows")
        return r

    return {
        "str": str, "int": int, "float": float, "bool": bool, "len": len, "list": list, "tuple": tuple,
        "dict": dict, "set": set, "sorted": sorted, "min": min, "max": max, "any": any, "all": all,
        "map": map, "filter": filter, "enumerate": enumerate, "zip": zip, "range": _range, "repr": repr,
        "abs": abs, "next": next, "iter": iter, "reversed": reversed, "frozenset": frozenset,
        "isinstance": None, "open": None, "hasattr": None,
        "re.match": _regex("match"), "re.search": _regex("search"), "re.fullmatch": _regex("fullmatch"),
        "re.sub": _regex("sub"), "re.split": _regex("split"), "re.findall": _regex("findall"),
        "json.loads": json.loads,
        "os.path.join": posixpath.join, "os.path.dirname": posixpath.dirname,
        "os.path.basename": posixpath.basename, "os.path.normpath": posixpath.normpath,
        "os.path.abspath": posixpath.normpath, "os.path.realpath": posixpath.normpath,
        "os.path.splitext": posixpath.splitext, "os.fspath": str, "os.path.expanduser": _expanduser,
        "os.path.pardir": "..", "os.pardir": "..", "os.path.curdir": ".", "os.curdir": ".",
        "os.path.sep": "/", "os.sep": "/", "os.pathsep": ":",
        "ctypes.RTLD_GLOBAL": 256, "ctypes.RTLD_LOCAL": 0, "os.RTLD_GLOBAL": 256, "os.RTLD_LOCAL": 0,
        "os.RTLD_LAZY": 1, "os.RTLD_NOW": 2, "os.RTLD_NODELETE": 4096, "os.RTLD_NOLOAD": 4,
        "os.RTLD_DEEPBIND": 8,
        "packaging.version.Version": _version, "packaging.version.parse": _version,
    }  # fmt: skip


_PLAIN = _builtins()


class Interpreter:
    """Runs statements in one module's namespace (``env``); see the module docstring."""

    def __init__(
        self,
        module_path: str,
        lookup: Callable[[str], Any] | None = None,
        read: Callable[[str], bytes | None] | None = None,
        files: Iterable[str] = (),
        site: bool = False,
        decide: Callable[[str, str, bool], bool] | None = None,
    ) -> None:
        self.module_path = module_path
        # run load calls (:data:`LOAD_CALLS`): ``decide(name or path, api, caught)`` says whether the load
        # succeeds (raising the package's OSError or :class:`Unknown` when it does not, or cannot know;
        # ``caught``: a handler around it catches an OSError); each load that succeeds, each that fails
        # inside such a handler, and each import a function runs, is kept in ``trace`` as ``(kind, name,
        # api, line, module path)``, kind ``load``, ``failed`` or ``import``
        self.decide = decide
        self.trace: list[tuple[str, str, str, int, str]] = []
        self.line = 0
        self.catching: list[list[ast.ExceptHandler]] = []
        self.site = site
        self.package = posixpath.dirname(module_path)
        self.lookup, self.read = lookup, read
        self.files = frozenset(files)  # tested by membership; every listing of it is sorted
        self.env: dict[str, Any] = {"__file__": module_path, "__name__": module_path}
        self.steps = 0
        self.depth = 0
        self.modules: dict[str, _Module] = {}  # the package's modules a program embeds, by path

    # statements ----------------------------------------------------------------------------------
    def run(self, body: Iterable[ast.stmt], scope: dict[str, Any] | None = None) -> None:
        for stmt in body:
            self.statement(stmt, self.env if scope is None else scope)

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unknown("more steps than abiprobe follows")

    def statement(self, stmt: ast.stmt, scope: dict[str, Any]) -> None:
        self._tick()
        if isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, scope)
            for t in stmt.targets:
                self.assign(t, value, scope)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, self.eval(stmt.value, scope), scope)
        elif isinstance(stmt, ast.AugAssign):
            op = _BINOPS.get(type(stmt.op))
            if op is None or not isinstance(stmt.target, ast.Name):
                raise Unknown(ast.unparse(stmt))
            value = self._op(op, self.eval(stmt.target, scope), self.eval(stmt.value, scope))
            self.assign(stmt.target, value, scope)
        elif isinstance(stmt, ast.If):
            self.run(stmt.body if self.truth(self.eval(stmt.test, scope)) else stmt.orelse, scope)
        elif isinstance(stmt, (ast.For, ast.While)):
            self._loop(stmt, scope)
        elif isinstance(stmt, ast.Try):
            self._try(stmt, scope)
        elif isinstance(stmt, ast.With):
            for item in stmt.items:
                value = self.eval(item.context_expr, scope)
                value = value.value if isinstance(value, _Context) else value
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, value, scope)
            self.run(stmt.body, scope)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope[stmt.name] = _Function(stmt, self.env)
        elif isinstance(stmt, ast.ClassDef):
            scope[stmt.name] = self._class(stmt, scope)
        elif isinstance(stmt, ast.Return):
            raise _Return(None if stmt.value is None else self.eval(stmt.value, scope))
        elif isinstance(stmt, ast.Raise):
            raise self._raised(stmt, scope)
        elif isinstance(stmt, ast.Break):
            raise _Break
        elif isinstance(stmt, ast.Continue):
            raise _Continue
        elif isinstance(stmt, ast.Import):
            for a in stmt.names:
                scope[a.asname or a.name.split(".")[0]] = Ref(a.name if a.asname else a.name.split(".")[0])
                if self.decide is not None and scope is not self.env:  # a function's own import
                    self.trace.append(("import", a.name, "", self.line, self.module_path))
        elif isinstance(stmt, ast.ImportFrom):
            base = "." * stmt.level + (stmt.module or "")
            if self.decide is not None and scope is not self.env:  # the module, then each name (a module?)
                absolute = self._absolute(base)
                self.trace.append(("import", absolute, "", self.line, self.module_path))
                self.trace += [
                    ("import", f"{absolute}.{a.name}", "", self.line, self.module_path)
                    for a in stmt.names
                    if a.name != "*"
                ]
            for a in stmt.names:
                if a.name != "*":
                    own = self._own_import(stmt, a.name) if stmt.level or self.modules or self.files else None
                    scope[a.asname or a.name] = (
                        own
                        if own is not None
                        else Ref(f"{base}.{a.name}".lstrip(".") if not stmt.level else "")
                    )
        elif isinstance(stmt, ast.Expr) and (line := _line_hook(stmt.value)) is not None:
            self.line = line
        elif isinstance(stmt, ast.Expr) and _module_hook(stmt.value) is not None:
            self._embedded(*_module_hook(stmt.value))  # type: ignore[misc]
        elif isinstance(stmt, ast.Expr):
            self._effect(stmt.value, scope)
        elif isinstance(stmt, ast.Assert):
            if not self.truth(self.eval(stmt.test, scope)):
                message = "" if stmt.msg is None else str(self.plain(self.eval(stmt.msg, scope)))
                raise Raised("AssertionError", message)
        elif isinstance(stmt, (ast.Pass, ast.Global, ast.Nonlocal)):
            pass
        else:
            raise Unknown(f"{type(stmt).__name__} statement")

    def _embedded(self, path: str, source: str) -> None:
        """Run a module of the package that a program embeds, in a namespace of its own (a statement
        it cannot compute leaves the names it binds :class:`Opaque`, as :meth:`step` does)."""
        tree = parse_module(source)
        if tree is None:
            return
        child = Interpreter(path, self.lookup, self.read, self.files, self.site)
        child.modules, child.steps = self.modules, self.steps
        self.modules[path] = _Module(path, child.env)  # before its body: an import of itself finds it
        for stmt in tree.body:
            child.step(stmt)
        self.steps = child.steps

    def _absolute(self, base: str) -> str:
        """A relative module name (``..x``) made absolute from this module's package."""
        level = len(base) - len(base.lstrip("."))
        if not level:
            return base
        parts = posixpath.dirname(self.module_path).split("/")
        parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join([*parts, *([base[level:]] if base[level:] else [])])

    def _own_import(self, stmt: ast.ImportFrom, name: str) -> Any:
        """What ``from .x import name`` (or ``from pkg.x import name``) binds when module ``x`` (or
        ``name`` itself, a module) is one a program embeds; None otherwise."""
        if not stmt.level:  # ``from pkg.docs.version import x``: the module at that path of site-packages
            if not stmt.module:
                return None
            base = posixpath.join(*stmt.module.split("."))
        else:
            folder = posixpath.dirname(self.module_path)
            for _ in range(stmt.level - 1):
                folder = posixpath.dirname(folder)
            base = posixpath.join(folder, *(stmt.module or "").split(".")) if stmt.module else folder
        for path in (f"{base}/{name}.py", f"{base}/{name}/__init__.py"):
            if path in self.modules:
                return self.modules[path]
        for path in (f"{base}.py", f"{base}/__init__.py"):
            module = self.modules.get(path) or self._small_module(path)
            if module is not None:
                return module.env.get(name, Opaque(f"{name} of {path}"))
        return None

    def _small_module(self, path: str) -> _Module | None:
        """A small module of the wheel (a generated ``version.py``: constants) run in its own namespace
        when first imported from, as an embedded one is; None when it is not there or larger than
        :data:`_SMALL_MODULE` bytes."""
        if self.read is None or not path.endswith(".py") or (self.files and path not in self.files):
            return None
        try:
            data = self.read(path)
        except Exception:
            return None
        if data is None or len(data) > _SMALL_MODULE:
            return None
        try:
            self._embedded(path, data.decode("utf-8"))
        except UnicodeDecodeError:
            return None
        return self.modules.get(path)

    def step(self, stmt: ast.stmt) -> None:
        """Run one top-level statement; a name it binds that cannot be computed becomes :class:`Opaque`
        (what else the module computes stays known)."""
        try:
            self.statement(stmt, self.env)
        except (Unknown, Raised, _Break, _Continue, _Return, RecursionError, MemoryError) as exc:
            why = str(exc) if isinstance(exc, (Unknown, Raised)) else type(exc).__name__
            for name in bound_names(stmt):
                self.env[name] = Opaque(why)

    def _effect(self, node: ast.expr, scope: dict[str, Any]) -> None:
        """An expression statement: a call for its effect. One that changes a value this namespace
        holds (``libs.append(x)``) is run; others (``logger.warning(...)``) change no value read here."""
        if isinstance(node, ast.Constant):
            return
        mutates = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATING
            and isinstance(node.func.value, ast.Name)
            and (node.func.value.id in scope or node.func.value.id in self.env)
        )
        own = (  # a call of the package's own function: what it raises, the package raises
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and isinstance(scope.get(node.func.id, self.env.get(node.func.id)), _Function)
        )
        loads = self.decide is not None and isinstance(node, ast.Call)
        try:
            self.eval(node, scope)
        except Unknown:
            # a program recording loads must not pass over a call it cannot follow: that call may load
            if mutates or (
                loads and ast.unparse(node).split(".", 1)[0].split("(", 1)[0] not in _HARMLESS_EFFECTS
            ):
                raise
        except Raised:
            if mutates or own or loads:
                raise

    def _class(self, stmt: ast.ClassDef, scope: dict[str, Any]) -> Any:
        """An exception class with no body of its own (``pass``, a docstring), its bases builtin
        exceptions or the package's own; any other class is :class:`Opaque` (using it is not known)."""
        trivial = all(
            isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            for s in stmt.body
        )
        kinds = {stmt.name}
        for base in stmt.bases:
            value = scope.get(base.id, self.env.get(base.id)) if isinstance(base, ast.Name) else None
            if isinstance(value, _Class):
                kinds |= value.kinds
            elif isinstance(base, ast.Name) and base.id in _EXCEPTIONS:
                kinds |= _EXCEPTIONS[base.id]
            else:
                trivial = False
        if not trivial or not stmt.bases or stmt.keywords or stmt.decorator_list:
            return Opaque(f"the class {stmt.name}")
        module = self.module_path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        return _Class(f"{module}.{stmt.name}", frozenset(kinds))

    def _raised(self, stmt: ast.Raise, scope: dict[str, Any]) -> Exception:
        if stmt.exc is None:
            return Unknown("a bare raise")
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        name = ast.unparse(exc).rsplit(".", 1)[-1]
        message = ""
        if isinstance(stmt.exc, ast.Call) and stmt.exc.args:
            try:
                message = str(self.eval(stmt.exc.args[0], scope))
            except (Unknown, Raised):
                message = ""
        own = scope.get(exc.id, self.env.get(exc.id)) if isinstance(exc, ast.Name) else None
        if isinstance(own, Opaque):
            return Unknown(own.why)
        out = Raised(own.qualified, message, own.kinds) if isinstance(own, _Class) else Raised(name, message)
        out.line, out.path = self.line, self.module_path
        return out

    def _loop(self, stmt: ast.For | ast.While, scope: dict[str, Any]) -> None:
        items: Iterator[Any]
        if isinstance(stmt, ast.For):
            items = iter(self.iterable(self.eval(stmt.iter, scope)))
        else:
            items = iter(range(MAX_ITEMS))
        for n, item in enumerate(items):
            if n >= MAX_ITEMS:
                raise Unknown("a loop longer than abiprobe follows")
            if isinstance(stmt, ast.For):
                self.assign(stmt.target, item, scope)
            elif not self.truth(self.eval(stmt.test, scope)):
                break
            try:
                self.run(stmt.body, scope)
            except _Break:
                return
            except _Continue:
                continue
        else:
            if isinstance(stmt, ast.While):
                raise Unknown("a while loop longer than abiprobe follows")
        self.run(stmt.orelse, scope)

    def _try(self, stmt: ast.Try, scope: dict[str, Any]) -> None:
        try:
            try:
                self.catching.append(stmt.handlers)
                try:
                    self.run(stmt.body, scope)
                finally:
                    self.catching.pop()
            except Raised as exc:
                handler = next(
                    (h for h in stmt.handlers if any(_catches(h.type, k) for k in exc.kinds)), None
                )
                if handler is None:
                    raise
                if handler.name:
                    scope[handler.name] = exc
                self.run(handler.body, scope)
            else:
                self.run(stmt.orelse, scope)
        finally:
            self.run(stmt.finalbody, scope)

    def assign(self, target: ast.expr, value: Any, scope: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(self.iterable(value))
            if len(items) != len(target.elts):
                raise Raised("ValueError", "cannot unpack")
            for t, v in zip(target.elts, items, strict=True):
                self.assign(t, v, scope)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            container = self.eval(target.value, scope)
            if not isinstance(container, (dict, list)):
                raise Unknown(ast.unparse(target))
            container[self.eval(target.slice, scope)] = value
        else:
            raise Unknown(f"an assignment to {ast.unparse(target)}")

    # expressions ---------------------------------------------------------------------------------
    def truth(self, value: Any) -> bool:
        return bool(self.plain(value))

    def plain(self, value: Any) -> Any:
        """``value`` as a value Python operators apply to (a Ref resolved)."""
        if isinstance(value, Ref):
            return self.resolve(value)
        if isinstance(value, (*_PURE_TYPES, re.Match, _Spec)):
            return value
        if isinstance(value, Opaque):
            raise Unknown(value.why)
        raise Unknown(f"{value!r} is not a value abiprobe evaluates")

    def _compared(self, value: Any) -> Any:
        """A value as a comparison takes it: a loaded library's handle is itself (``lib is None``)."""
        return value if isinstance(value, Handle) else self.plain(value)

    def resolve(self, ref: Ref) -> Any:
        if ref.dotted in _PLAIN and _PLAIN[ref.dotted] is not None:
            return _PLAIN[ref.dotted]
        if self.lookup is None or not ref.dotted:
            raise Unknown(f"{ref.dotted or 'a module of the package'} is not fixed here")
        try:
            return self.lookup(ref.dotted)
        except Exception as exc:  # the caller's own CannotEvaluate, or a value that is not there
            raise Unknown(str(exc)) from None

    def iterable(self, value: Any) -> Iterable[Any]:
        value = self.plain(value) if isinstance(value, Ref) else value
        if isinstance(value, (list, tuple, str, set, frozenset, range, map, filter, zip, enumerate)):
            return value
        if isinstance(value, dict):
            return list(value)
        if isinstance(value, Iterator):
            return value
        raise Unknown(f"iterating {value!r}")

    def eval(self, node: ast.expr, scope: dict[str, Any]) -> Any:
        self._tick()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            if node.id in self.env:
                return self.env[node.id]
            if node.id in _PLAIN:
                return Ref(node.id)
            raise Unknown(f"the name {node.id}")
        if isinstance(node, ast.Attribute):
            return self._attribute(self.eval(node.value, scope), node.attr)
        if isinstance(node, ast.Call):
            return self._call(node, scope)
        if isinstance(node, ast.JoinedStr):
            return "".join(str(self.eval(v, scope)) for v in node.values)
        if isinstance(node, ast.FormattedValue):
            value = self.plain(self.eval(node.value, scope))
            if node.conversion == 114:
                value = repr(value)
            elif node.conversion in (115, 97):
                value = str(value)
            spec = "" if node.format_spec is None else str(self.eval(node.format_spec, scope))
            return format(value, spec)
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if isinstance(node.op, ast.Div):
                left, right = self.eval(node.left, scope), self.eval(node.right, scope)
                if isinstance(left, PackagePath):
                    return PackagePath(posixpath.join(left.path, str(self.plain(right))))
                op = operator.truediv
                return op(self.plain(left), self.plain(right))
            if op is None:
                raise Unknown(ast.unparse(node))
            return self._op(op, self.eval(node.left, scope), self.eval(node.right, scope))
        if isinstance(node, ast.BoolOp):
            result: Any = None
            for v in node.values:
                result = self.eval(v, scope)
                if self.truth(result) == isinstance(node.op, ast.Or):
                    return result
            return result
        if isinstance(node, ast.UnaryOp):
            inner = self.plain(self.eval(node.operand, scope))
            if isinstance(node.op, ast.Not):
                return not inner
            if isinstance(node.op, ast.USub):
                return -inner
            raise Unknown(ast.unparse(node))
        if isinstance(node, ast.Compare):
            left = self._compared(self.eval(node.left, scope))
            for cmp, right_node in zip(node.ops, node.comparators, strict=True):
                right = self._compared(self.eval(right_node, scope))
                if not self._op(COMPARE[type(cmp)], left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.eval(node.body if self.truth(self.eval(node.test, scope)) else node.orelse, scope)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = [self.eval(e, scope) for e in node.elts]
            return (
                tuple(items)
                if isinstance(node, ast.Tuple)
                else items
                if isinstance(node, ast.List)
                else set(items)
            )
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    out.update(self.plain(self.eval(v, scope)))
                else:
                    out[self.plain(self.eval(k, scope))] = self.eval(v, scope)
            return out
        if isinstance(node, ast.Subscript):
            base = self.plain(self.eval(node.value, scope))
            if isinstance(node.slice, ast.Slice):
                s = node.slice
                bounds = [
                    None if b is None else self.plain(self.eval(b, scope)) for b in (s.lower, s.upper, s.step)
                ]
                return base[slice(*bounds)]
            key = self.plain(self.eval(node.slice, scope))
            try:
                return base[key]
            except KeyError:
                raise Raised("KeyError", repr(key)) from None
            except IndexError:
                raise Raised("IndexError", "index out of range") from None
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self._comprehension(node, scope)
        raise Unknown(f"{type(node).__name__} expression")

    def _op(self, op: Callable[[Any, Any], Any], left: Any, right: Any) -> Any:
        if op in (operator.is_, operator.is_not) and (isinstance(left, Handle) or isinstance(right, Handle)):
            return op(left, right)  # a loaded library's handle is no other value (``lib is None``)
        left, right = self.plain(left), self.plain(right)
        if op is operator.mul and any(isinstance(x, (str, list, tuple)) for x in (left, right)):
            sized, count = (left, right) if isinstance(left, (str, list, tuple)) else (right, left)
            if not isinstance(count, int) or len(sized) * max(count, 0) > 1 << 16:
                raise Unknown("a repetition longer than abiprobe follows")
        if isinstance(left, int) and isinstance(right, int) and max(abs(left), abs(right)) > 1 << 128:
            raise Unknown("a number larger than abiprobe follows")
        try:
            out = op(left, right)
        except ZeroDivisionError:
            raise Raised("ZeroDivisionError") from None
        except TypeError:
            raise Raised("TypeError") from None
        if isinstance(out, str) and len(out) > 1 << 16:
            raise Unknown("a string longer than abiprobe follows")
        return out

    def _comprehension(self, node: ast.expr, scope: dict[str, Any]) -> Any:
        inner = dict(scope)
        out: list[Any] = []
        assert isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp))

        def walk(i: int) -> None:
            if i == len(node.generators):
                if isinstance(node, ast.DictComp):
                    out.append((self.plain(self.eval(node.key, inner)), self.eval(node.value, inner)))
                else:
                    out.append(self.eval(node.elt, inner))
                if len(out) > MAX_ITEMS:
                    raise Unknown("a comprehension longer than abiprobe follows")
                return
            gen = node.generators[i]
            for item in self.iterable(self.eval(gen.iter, inner)):
                self.assign(gen.target, item, inner)
                if all(self.truth(self.eval(c, inner)) for c in gen.ifs):
                    walk(i + 1)

        walk(0)
        if isinstance(node, ast.DictComp):
            return dict(out)
        if isinstance(node, ast.SetComp):
            return set(out)
        return out

    def _attribute(self, base: Any, attr: str) -> Any:
        if isinstance(base, _Module):
            if attr not in base.env:
                raise Unknown(f"{attr} of {base.path}")
            return base.env[attr]
        if isinstance(base, Ref):
            ref = Ref(f"{base.dotted}.{attr}" if base.dotted else "")
            if self.lookup is not None and ref.dotted and ref.dotted not in _PLAIN:
                try:
                    value = self.lookup(ref.dotted)
                except Exception as exc:
                    # a name the values define without a value: ``hasattr`` is True, reading it is not known
                    return Opaque(str(exc)) if getattr(exc, "defined", False) else ref
                return value if isinstance(value, _PURE_TYPES) or callable(value) else ref
            return ref
        if isinstance(base, PackagePath):
            if attr == "parent":  # site-packages' own parent too (``../..`` is ``<prefix>/lib``)
                return PackagePath(posixpath.join(base.path, ".."))
            if attr == "parents":  # ``parents[1]``: up from the file, past site-packages too
                ups = [PackagePath(posixpath.join(base.path, ".."))]
                while len(ups) < _MAX_PARENTS:
                    ups.append(PackagePath(posixpath.join(ups[-1].path, "..")))
                return tuple(ups)
            if attr in ("name", "stem", "suffix"):
                name = posixpath.basename(base.path)
                return {
                    "name": name,
                    "stem": posixpath.splitext(name)[0],
                    "suffix": posixpath.splitext(name)[1],
                }[attr]
            return _Bound(base, attr)
        if isinstance(base, _Spec) and attr in ("name", "origin", "submodule_search_locations"):
            return base.locations if attr == "submodule_search_locations" else getattr(base, attr)
        if isinstance(base, Raised) and attr == "args":
            return (base.message,)
        if isinstance(base, _ExitStack) and attr in ("enter_context", "callback", "close", "push"):
            return _Bound(base, attr)
        if attr.startswith("_"):
            raise Unknown(f"the attribute {attr}")
        if isinstance(base, (str, dict, list, tuple, set, Version, re.Match, _File)):
            return _Bound(base, attr)
        raise Unknown(f"{attr} of {type(base).__name__}")

    def _call(self, node: ast.Call, scope: dict[str, Any]) -> Any:
        func = self.eval(node.func, scope)
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.iterable(self.eval(a.value, scope)))
            else:
                args.append(self.eval(a, scope))
        kwargs = {k.arg: self.eval(k.value, scope) for k in node.keywords if k.arg is not None}
        if any(k.arg is None for k in node.keywords):
            raise Unknown("a call with **kwargs")
        if isinstance(func, _Function):
            return self._run_function(func, args, kwargs)
        if isinstance(func, _Bound):
            return self._method(func, args, kwargs)
        if isinstance(func, Ref):
            return self._library(func.dotted, args, kwargs)
        if callable(func):  # a function the caller's values hold (``torch.cuda.is_available``)
            out = func(*[self.plain(a) for a in args], **{k: self.plain(v) for k, v in kwargs.items()})
            return self.plain(out)
        raise Unknown(f"calling {ast.unparse(node.func)}")

    def _library(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if self.decide is not None and dotted in LOAD_CALLS and args:
            target = args[0].path if isinstance(args[0], PackagePath) else self.plain(args[0])
            if not isinstance(target, str):
                raise Unknown(f"{dotted} of {target!r}")
            caught = any(_catches(h.type, k) for hs in self.catching for h in hs for k in _OS_ERROR)
            api = LOAD_CALLS[dotted]
            try:
                loads = self.decide(target, api, caught)
            except Raised:
                if caught:  # a candidate the package goes on from
                    self.trace.append(("failed", target, api, self.line, self.module_path))
                raise
            if loads:
                self.trace.append(("load", target, api, self.line, self.module_path))
            return Handle(target)
        if dotted in ("open", "io.open"):
            return _File(self._read(args[0]))
        if dotted == "json.load" and args and isinstance(args[0], _File):
            return self._json(args[0].text)
        if dotted in ("pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "Path") and args:
            if len(args) == 1 and isinstance(args[0], PackagePath):
                return args[0]
            # ``Path(a, b)`` joins its parts as ``Path(a) / b`` does
            return PackagePath(posixpath.join(*[str(a) if isinstance(a, PackagePath) else str(self.plain(a))
                                                for a in args]))  # fmt: skip
        if dotted == "glob.glob" and args:
            return self._glob(str(self.plain(args[0])))
        if dotted in ("os.listdir",) and args:
            return self._children(str(self.plain(args[0])))
        if self.site and dotted == "os.path.isdir" and args:
            return self._is_dir(str(self.plain(args[0])))
        if self.site and dotted in ("importlib.util.find_spec", "importlib.machinery.PathFinder.find_spec"):
            return self._find_spec(str(self.plain(args[0])) if args else "")
        if self.site and dotted == "site.getsitepackages" and not args:
            return ["."]  # a virtual environment's one site-packages (its ``lib64`` twin is a link)
        if self.site and dotted == "site.getusersitepackages":
            raise Unknown("the user's site-packages, outside the environment")
        if self.site and dotted == "sysconfig.get_paths" and not args:
            return _SitePaths(purelib=".", platlib=".")
        if self.site and dotted == "sysconfig.get_path" and args:
            return _SitePaths(purelib=".", platlib=".")[str(self.plain(args[0]))]
        if dotted in ("os.path.exists", "os.path.isfile") and args and self.files:
            path = site_relative(str(self.plain(args[0])))
            if self._outside(path):
                return False
            return path in self.files or (dotted == "os.path.exists" and self._holds(path))
        if dotted == "contextlib.ExitStack" and not args and not kwargs:
            return _ExitStack()
        if self.site and dotted in _RESOURCE_FILES and len(args) == 1:
            return self._resource_folder(self.plain(args[0]))
        if dotted in _AS_FILE and len(args) == 1 and isinstance(args[0], PackagePath):
            return _Context(args[0])  # a package installed as files: the path itself
        if (
            dotted == "hasattr"
            and len(args) == 2
            and isinstance(args[0], Ref)
            and args[0].dotted == "builtins"
        ):
            # what the package reads from ``builtins`` that Python does not define there: the target runs
            # no code of its own before the import (as its environment sets no variable)
            return hasattr(builtins, str(self.plain(args[1])))
        if dotted == "hasattr" and len(args) == 2 and isinstance(args[0], Ref):
            attr = self._attribute(args[0], str(self.plain(args[1])))
            if isinstance(attr, Ref):
                raise Unknown(f"whether {args[0].dotted} has {args[1]}")
            return True
        plain = _PLAIN.get(dotted)
        if dotted in ("isinstance", "hasattr") or (plain is None and dotted in _PLAIN):
            raise Unknown(dotted)
        func = plain if plain is not None else self.resolve(Ref(dotted))
        if not callable(func):
            raise Unknown(f"{dotted} is not a function abiprobe evaluates")
        try:
            out = func(*[self._arg(a) for a in args], **{k: self._arg(v) for k, v in kwargs.items()})
        except (Unknown, Raised):
            raise
        except StopIteration:
            raise Raised("StopIteration") from None
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise Raised(type(exc).__name__, str(exc)) from None
        return out if isinstance(out, (Iterator, map, filter, zip, enumerate, range)) else self.plain(out)

    def _arg(self, value: Any) -> Any:
        if isinstance(value, Handle):  # kept in a list, passed on
            return value
        if isinstance(value, _Function):
            return lambda *a: self._run_function(value, list(a), {})
        if isinstance(value, Ref) and value.dotted in _PLAIN:
            return _PLAIN[value.dotted]
        if isinstance(value, (Iterator, map, filter, zip, enumerate, range)):
            return value
        return self.plain(value)

    def _method(self, bound: _Bound, args: list[Any], kwargs: dict[str, Any]) -> Any:
        owner, name = bound.owner, bound.name
        if isinstance(owner, PackagePath):
            if name in ("read_text", "read_bytes", "open"):
                text = self._read(owner.path)
                return _File(text) if name == "open" else text
            if name in ("glob", "rglob") and args:
                pattern = posixpath.join(
                    owner.path, "**" if name == "rglob" else "", str(self.plain(args[0]))
                )
                return [PackagePath(p) for p in self._glob(pattern.replace("/**//", "/**/"))]
            if name in ("exists", "is_file") and self.files:
                if self._outside(owner.path):
                    return False
                return owner.path in self.files or (
                    name == "exists" and ((self.site and owner.path == ".") or self._holds(owner.path))
                )
            if name in ("resolve", "absolute"):
                return owner
            if name == "is_dir" and self.site:
                return self._is_dir(owner.path)
            if name == "iterdir" and self.site:
                return [PackagePath(posixpath.join(owner.path, c)) for c in self._children(owner.path)]
            if name == "joinpath":
                return PackagePath(posixpath.join(owner.path, *[str(self.plain(a)) for a in args]))
            raise Unknown(f"Path.{name}")
        if isinstance(owner, _ExitStack):
            if name == "enter_context" and len(args) == 1 and isinstance(args[0], _Context):
                return args[0].value
            if name in ("callback", "close", "push"):
                return None
            raise Unknown(f"ExitStack.{name}")
        if isinstance(owner, _File):
            if name == "read":
                return owner.text
            if name == "readlines":
                return owner.text.splitlines(keepends=True)
            raise Unknown(f"file.{name}")
        if name == "format" and isinstance(owner, str) and ("__" in owner or len(owner) > MAX_TEXT):
            raise Unknown("a format string abiprobe does not apply")
        allowed = (
            (isinstance(owner, str) and name in _STR_METHODS)
            or (isinstance(owner, (dict, list, tuple, set)) and name in _CONTAINER_METHODS | _MUTATING)
            or (isinstance(owner, re.Match) and name in ("group", "groups", "groupdict", "start", "end"))
        )
        if not allowed:
            raise Unknown(f"{type(owner).__name__}.{name}")
        try:
            out = getattr(owner, name)(
                *[self._arg(a) for a in args], **{k: self._arg(v) for k, v in kwargs.items()}
            )
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise Raised(type(exc).__name__, str(exc)) from None
        if name in ("items", "keys", "values"):
            return list(out)
        return out

    def _run_function(self, func: _Function, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if self.depth >= MAX_DEPTH:
            raise Unknown("calls nested deeper than abiprobe follows")
        a = func.node.args
        names = [p.arg for p in (*a.posonlyargs, *a.args)]
        local: dict[str, Any] = {}
        defaults = a.defaults
        for i, name in enumerate(names):
            if i < len(args):
                local[name] = args[i]
            elif name in kwargs:
                local[name] = kwargs.pop(name)
            elif i >= len(names) - len(defaults):
                local[name] = self.eval(defaults[i - (len(names) - len(defaults))], func.scope)
            else:
                raise Unknown(f"{func.node.name}() without its argument {name}")
        for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            if p.arg in kwargs:
                local[p.arg] = kwargs.pop(p.arg)
            elif d is not None:
                local[p.arg] = self.eval(d, func.scope)
            else:
                raise Unknown(f"{func.node.name}() without its argument {p.arg}")
        if len(args) > len(names) or kwargs or a.vararg or a.kwarg:
            raise Unknown(f"{func.node.name}() called with arguments abiprobe does not bind")
        self.depth += 1
        # a function of another module runs in that module's namespace (its globals, its ``__file__``)
        saved, line = (self.env, self.module_path), self.line
        self.env = func.scope
        file = func.scope.get("__file__")
        self.module_path = file if isinstance(file, str) else self.module_path
        try:
            self.run(func.node.body, local)
        except _Return as ret:
            return ret.value
        finally:
            self.env, self.module_path = saved
            self.line = line
            self.depth -= 1
        return None

    def _children(self, folder: str) -> list[str]:
        """The names in an installed folder (``.``: site-packages), sorted; a folder the set does not
        have is Python's FileNotFoundError."""
        folder = posixpath.normpath(folder)
        if not self.files:
            raise Unknown(f"the files in {folder}")
        if folder.startswith(("/", "..")):
            raise Unknown(f"the files in {folder}, outside the installed set")
        cut = 0 if folder == "." else len(folder) + 1
        names = sorted(
            {f[cut:].split("/", 1)[0] for f in self.files if cut == 0 or f.startswith(folder + "/")}
        )
        if not names:
            raise Raised("FileNotFoundError", f"No such file or directory: {folder!r}")
        return names

    def _outside(self, path: str) -> bool:
        """Whether a path tested for is outside what the set installs: under the base interpreter's
        prefix (``sys.base_prefix``), whose folders an installer puts no package's file in, True (it is
        not there); anywhere else outside the environment's prefix, not known."""
        if path == BASE_PREFIX or path.startswith(BASE_PREFIX + "/"):
            return True
        if self.site and not in_prefix(path):
            raise Unknown(f"whether {path}, outside the environment, exists")
        return False

    def _resource_folder(self, package: Any) -> PackagePath:
        """``importlib.resources.files("pkg")``: the folder of a package the set installs."""
        if not isinstance(package, str) or not package or package.startswith("."):
            raise Unknown(f"importlib.resources.files({package!r})")
        folder = package.replace(".", "/")
        if f"{folder}/__init__.py" not in self.files and not self._is_dir(folder):
            raise Unknown(f"whether {package} is a package the set installs")
        return PackagePath(folder)

    def _is_dir(self, folder: str) -> bool:
        folder = posixpath.normpath(folder)
        if folder.startswith(".."):  # the environment's own folders: every virtual environment has them
            folder = site_relative(folder)
            if in_prefix(folder) and folder in _PREFIX_FOLDERS:
                return True
        if folder.startswith(("/", "..")) and not (in_prefix(folder) and self._holds(folder)):
            raise Unknown(f"whether {folder}, outside the installed set, is a folder")
        return bool(self.files) and (folder == "." or self._holds(folder))

    def _holds(self, folder: str) -> bool:
        return any(f.startswith(folder + "/") for f in self.files)

    def _find_spec(self, name: str) -> _Spec | None:
        """The spec of a module the set installs (a package, a ``.py`` file, an extension module, a
        namespace folder); a name the set lacks may be a module of Python or of the environment: not
        known."""
        if not name or name.startswith(".") or not self.files:
            raise Unknown(f"importlib.util.find_spec({name!r})")
        base = name.replace(".", "/")
        if f"{base}/__init__.py" in self.files:
            return _Spec(name, f"{base}/__init__.py", [base])
        if f"{base}.py" in self.files:
            return _Spec(name, f"{base}.py", None)
        depth = base.count("/")
        extensions = sorted(
            f for f in self.files if f.startswith(base + ".") and f.endswith(".so") and f.count("/") == depth
        )
        if extensions:
            return _Spec(name, extensions[0], None)
        if self._is_dir(base):
            return _Spec(name, None, [base])
        raise Unknown(f"whether {name} is importable (the set does not install it)")

    def _read(self, path: Any) -> str:
        path = posixpath.normpath(str(self.plain(path)))
        if self.read is None:
            raise Unknown(f"the content of {path}")
        if self.files and path not in self.files:
            raise Raised("FileNotFoundError", f"No such file or directory: {path!r}")
        data = self.read(path)
        if data is None:
            raise Unknown(f"the content of {path}")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise Raised("UnicodeDecodeError") from None

    def _json(self, text: str) -> Any:
        try:
            return json.loads(text)
        except ValueError as exc:
            raise Raised("JSONDecodeError", str(exc)) from None

    def _glob(self, pattern: str) -> list[str]:
        pattern = posixpath.normpath(pattern)
        if not self.files:
            raise Unknown(f"the files matching {pattern}")
        depth = pattern.count("/")
        return sorted(
            f for f in self.files if ("**" in pattern or f.count("/") == depth) and fnmatchcase(f, pattern)
        )


class _Bound:
    def __init__(self, owner: Any, name: str) -> None:
        self.owner, self.name = owner, name


def _catches(node: ast.expr | None, name: str) -> bool:
    if node is None:
        return True
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    names = {ast.unparse(i).rsplit(".", 1)[-1] for i in items}
    return bool(names & (_CATCH_ALL | {name} | _ERROR_BASES.get(name, set())))


def bound_names(stmt: ast.stmt) -> set[str]:
    """The names a statement binds anywhere in it (not inside the functions it defines, nor a
    comprehension's own variables, which stay inside it)."""
    out: set[str] = set()
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            continue
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.Lambda)):
            # only an assignment expression in it binds a name outside
            out.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    return out


_MUTATORS = frozenset({
    "append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse", "update", "setdefault",
    "add", "discard", "popitem", "__setitem__", "__delitem__", "__iadd__",
})  # fmt: skip


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def changed_names(stmt: ast.stmt) -> set[str]:
    """The names a simple statement changes other than by a plain assignment to the name itself: an
    augmented assignment (``paths += [...]``), an item or attribute stored or deleted (``libs[k] = v``),
    a method that changes the object in place (``paths.append(p)``), ``del name``. What such a name holds
    afterwards is not the value its last assignment gave it."""
    out: set[str] = set()
    if isinstance(stmt, ast.AugAssign):
        targets: list[ast.expr] = [stmt.target]
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        targets = list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]
    elif isinstance(stmt, ast.Delete):
        targets = list(stmt.targets)
    else:
        targets = []
    while targets:
        t = targets.pop()
        if isinstance(t, (ast.Tuple, ast.List)):  # unpacking: each element is a target of its own
            targets.extend(t.elts)
        elif isinstance(t, ast.Starred):
            targets.append(t.value)
        elif isinstance(t, ast.Name):
            if not isinstance(stmt, (ast.Assign, ast.AnnAssign)):  # ``x += ...``, ``del x``
                out.add(t.id)
        elif (name := _root(t)) is not None:  # ``libs[k] = v``, ``self.x = v``: the object changes
            out.add(name)
    if isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)):
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _MUTATORS
                and (name := _root(node.func.value))
            ):
                out.add(name)
    return out


def literal(value: Any, limit: int = 4096) -> str | None:
    """Python source for ``value`` when it is plain data (strings, numbers, lists, dicts ...) whose
    source is at most ``limit`` characters; None otherwise."""

    def plain(v: Any) -> bool:
        if isinstance(v, (str, int, float, bool, type(None))):
            return True
        if isinstance(v, (list, tuple, set, frozenset)):
            return all(plain(i) for i in v)
        if isinstance(v, dict):
            return all(plain(k) and plain(i) for k, i in v.items())
        return False

    if not plain(value):
        return None
    text = repr(value)
    return text if len(text) <= limit else None


__all__ = [
    "LINE_HOOK", "LOAD_CALLS", "Handle", "Interpreter", "Opaque", "PackagePath", "Raised", "Ref", "Unknown",
    "bound_names", "changed_names", "literal",
]  # fmt: skip
