"""The run-time values a package's loading code reads, as the set and the target fix them, and a small
evaluator of the expressions :mod:`abiprobe.binary.pysource` kept as ``{=expr=}`` (nothing is run).

Values: ``torch.version.*`` and ``torch.__version__`` from the ``torch/version.py`` of the set's torch
wheel (else from its version's local label: ``+cu130`` is CUDA 13.0, ``+cpu`` none); the target's Python
(``sys.version_info``, ``sys.version`` up to its minor release), machine (``platform.machine()``),
``sys.platform`` and ``os.name`` (Linux);
``os.environ`` holds ``PATH`` (folders holding none of the set's libraries) and ``HOME`` (not known), and
nothing else (an environment override takes its default: the target sets none). The set
is installed into a virtual environment, as pip and uv install it: ``site.ENABLE_USER_SITE`` is False
(and ``site.getsitepackages()``, in :mod:`abiprobe.binary.pyinterp`, is its one site-packages).
``torch.cuda.is_available()`` is True exactly when the set's torch is a CUDA build: a target is a machine
with an NVIDIA GPU and its driver; ``torch.cuda.get_device_capability()`` is the target GPU's (when given);
``torch.xpu``, ``torch.mps`` and ROCm are never available there.
An expression over anything else cannot be evaluated: :class:`CannotEvaluate` says what it needed.
"""

from __future__ import annotations

import ast
import functools
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from abiprobe.binary.pyflow import UNKNOWN_NAME
from abiprobe.binary.pyinterp import BASE_PREFIX, COMPARE, Interpreter, Opaque, Raised, Unknown
from abiprobe.binary.pyparse import parse_expr, parse_module
from abiprobe.binary.pyreturns import EXISTS, OBJECT
from abiprobe.binary.pyslice import TEST_NAME
from abiprobe.model.facts import WheelFacts
from abiprobe.model.target import Target

TOKEN = re.compile(r"\{=(.+?)=\}")
_LABEL_CUDA = re.compile(r"\+cu(\d+?)(\d)$")
_RUNTIME_PIN = re.compile(r"nvidia-cuda-runtime(?:-cu\d+)?\s*==\s*(\d+)\.(\d+)", re.I)
# torch 2.12 and later pin the toolkit's meta package with the parts they need: cudart among them
_TOOLKIT_PIN = re.compile(r"cuda-toolkit\s*\[([^\]]*)\]\s*==\s*(\d+)\.(\d+)", re.I)
MISSING = "__abiprobe_missing__"  # where with_files collects the computed paths found absent
_SAFE = (str, int, float, bool, tuple, list, dict, type(None))
# a parsed version's parts a package reads (``Version(torch.__version__).minor``)
_VERSION_FIELDS = frozenset({"major", "minor", "micro", "release", "public", "base_version", "local",
                             "pre", "post", "dev", "epoch", "is_prerelease", "is_devrelease"})  # fmt: skip
_MAX_ITEMS = 64  # a comprehension's items read
_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Mod: operator.mod, ast.Mult: operator.mul, ast.Sub: operator.sub,
    ast.FloorDiv: operator.floordiv,
}  # fmt: skip
_BUILTINS: dict[str, Callable[..., Any]] = {
    "str": str, "int": int, "float": float, "len": len, "tuple": tuple, "bool": bool, "min": min, "max": max,
    "map": lambda f, items: list(map(f, items)),
    "sorted": sorted, "range": lambda *a: list(range(*a)), "list": list,
}  # fmt: skip


class _Object(dict[str, Any]):
    """An instance of one of the package's classes, by its fields (``__abiprobe_object__(a=...)``): each
    field's expression, evaluated when it is read (a field the loading code never reads, such as the
    GPUs' compute capabilities beside the CUDA version a library name is built from, may read values
    the set and the target do not fix without making the instance unknown)."""

    def __init__(self, fields: Mapping[str, ast.expr], values: RuntimeValues) -> None:
        super().__init__(fields)
        self._values = values
        self._read: dict[str, Any] = {}

    def field(self, name: str) -> Any:
        if name not in self._read:
            self._read[name] = _eval(self[name], self._values)
        return self._read[name]


class CannotEvaluate(Exception):
    """An expression reads a value the set and the target do not fix (the message names it)."""


class EnvironUnknown(CannotEvaluate, Unknown):
    """A variable every process of the target has (``HOME``) whose value the set does not fix."""


class _Environ(dict[str, str]):
    """``os.environ`` of the target. Every process a user starts has ``PATH`` and ``HOME``: ``PATH`` is
    there as the empty list of folders (its folders hold programs, none of the set's libraries: a
    search of them finds none, as a search of the current folder finds none), ``HOME`` of a value not
    known (what a user keeps there, a JIT cache, is theirs); no other variable is set, so an override
    takes its default."""

    def __init__(self) -> None:
        super().__init__(PATH="")

    def __getitem__(self, name: str) -> str:
        if name == "HOME":
            raise EnvironUnknown("os.environ['HOME']: the target's home folder, not fixed by the set")
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        return name == "HOME" or super().__contains__(name)

    def get(self, name: str, default: Any = None) -> Any:
        if name in self:
            return self[name]
        return default


def _getenv(name: str, default: Any = None) -> Any:
    return _Environ().get(name, default)


class Defined(CannotEvaluate):
    """A name that is defined (``hasattr`` of it is True) but whose value the set does not fix."""

    defined = True


class VersionInfo(tuple[int, ...]):
    """``sys.version_info`` of the target: major and minor only (the micro release is not fixed)."""

    @property
    def major(self) -> int:
        return self[0]

    @property
    def minor(self) -> int:
        return self[1]


@dataclass(frozen=True)
class RuntimeValues:
    """Dotted names -> values for one set under one target, and where the torch values came from."""

    values: Mapping[str, Any]
    torch_source: str = ""  # "torch/version.py of torch-2.9.0..." or "the version label of ..."

    def lookup(self, dotted: str) -> Any:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if head in self.values:
                value = self.values[head]
                if isinstance(value, Opaque):  # it exists, of a value not known
                    raise Defined(value.why)
                for attr in parts[i:]:
                    value = _attribute(value, attr, dotted)
                return value
        if any(k.startswith(dotted + ".") for k in self.values):
            return _Namespace(dotted)
        raise CannotEvaluate(f"{dotted} is not a value the set and the target fix")

    def described(self, names: Sequence[str]) -> str:
        """``torch.version.cuda='13.0'`` for the names an expression read."""
        out: dict[str, str] = {}
        for n in sorted(names, key=len):
            if any(n.startswith(f"{o}.") for o in out):
                continue
            try:
                value = self.lookup(n)
            except CannotEvaluate:
                continue
            if not callable(value) and not isinstance(value, _Namespace):
                out[n] = f"{n}={value!r}"
        return ", ".join(out.values())


@dataclass(frozen=True)
class _Namespace:
    """A module or object whose attributes are values (``torch`` for ``hasattr(torch, "xpu")``)."""

    name: str


def _attribute(value: Any, attr: str, dotted: str) -> Any:
    if isinstance(value, _Object):
        if attr not in value:
            raise CannotEvaluate(f"{dotted}: a field abiprobe was not given")
        return value.field(attr)
    if isinstance(value, Version) and attr in _VERSION_FIELDS:
        return getattr(value, attr)
    if attr.startswith("_") or not isinstance(value, (*_SAFE, VersionInfo)):
        raise CannotEvaluate(f"{dotted}: not a value abiprobe evaluates")
    if isinstance(value, VersionInfo) and attr in ("major", "minor"):
        return getattr(value, attr)
    if not hasattr(value, attr):
        raise CannotEvaluate(f"{dotted}: {type(value).__name__} has no attribute {attr}")
    return getattr(value, attr)


def _torch_values(wheels: Sequence[WheelFacts]) -> tuple[dict[str, Any], str]:
    torch = next((w for w in wheels if w.metadata.name.lower() == "torch"), None)
    if torch is None:
        return {}, ""
    module = next((m for m in torch.python or () if m.name == "torch.version" and m.constants), None)
    values: dict[str, Any] = {}
    if module is not None:
        values = {f"torch.version.{k}": v for k, v in module.constants}
        source = f"torch/version.py of {torch.filename}"
    else:
        cuda = _build_cuda(torch)
        if cuda is not None:
            values = {"torch.version.cuda": cuda or None, "torch.version.hip": None}
        source = f"the version and requirements of {torch.filename} (no torch/version.py read)"
    tensor = next((m for m in torch.python or () if m.name == "torch._tensor"), None)
    for name, _ in tensor.constants if tensor is not None else ():
        # an attribute ``torch.Tensor`` defines (``hasattr`` is True); its value is not known
        values[f"torch.{name}"] = Opaque(f"the value of torch.{name} (only that it is defined is read)")
    values.setdefault("torch.version.__version__", torch.metadata.version)
    values["torch.__version__"] = values["torch.version.__version__"]
    values["torch.xpu.is_available"] = lambda: False
    values["torch.mps.is_available"] = lambda: False
    values["torch.backends.mps.is_available"] = lambda: False
    if "torch.version.cuda" not in values:  # which build it is is not known: nothing keyed on it is
        return values, source
    values.setdefault("torch.version.hip", None)
    cuda_build = values.get("torch.version.cuda") is not None
    values["torch.cuda.is_available"] = lambda: cuda_build
    if cuda_build:  # the target's one GPU (a machine with an NVIDIA GPU: at least one)
        values["torch.cuda.device_count"] = lambda: 1
        values["torch.cuda.device"] = lambda index=0: index
    return values, source


def torch_build_cuda(torch: WheelFacts) -> str | None:
    """The CUDA version ``torch`` was built for: its ``version.py``'s ``cuda`` when read (``""`` for a
    CPU build, whose ``cuda`` is None), else what :func:`_build_cuda` finds; None when nothing says."""
    module = next((m for m in torch.python or () if m.name == "torch.version" and m.constants), None)
    if module is not None:
        said = dict(module.constants)
        if "cuda" in said:
            return said["cuda"] or ""
    return _build_cuda(torch)


def _build_cuda(torch: WheelFacts) -> str | None:
    """The CUDA version a torch wheel was built for, without its ``version.py``: its local label
    (``+cu130``: ``13.0``; ``+cpu``: ``""``, none), else the CUDA runtime wheel it pins
    (``nvidia-cuda-runtime-cu12==12.8.90``: ``12.8``); None when neither says."""
    version = torch.metadata.version
    m = _LABEL_CUDA.search(version)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    if "+" in version:
        return ""
    for req in torch.metadata.requires_dist:
        pin = _RUNTIME_PIN.match(req)
        if pin and "extra ==" not in req:
            return f"{pin.group(1)}.{pin.group(2)}"
        kit = _TOOLKIT_PIN.match(req)
        if kit and "extra ==" not in req and "cudart" in {p.strip().lower() for p in kit.group(1).split(",")}:
            return f"{kit.group(2)}.{kit.group(3)}"
    return None


def runtime_values(target: Target, wheels: Sequence[WheelFacts]) -> RuntimeValues:
    """The values a set's loading code reads under ``target`` (see the module docstring)."""
    machine = target.machine
    values: dict[str, Any] = {
        "sys.version_info": VersionInfo(target.python),
        "sys.platform": "linux",
        # ``sys.version``'s text up to the minor release (what its tests compare: ``sys.version < '3'``)
        "sys.version": "{}.{}".format(*target.python),
        "os.name": "posix",
        "os.environ": _Environ(),
        "os.getenv": _getenv,
        "platform.machine": lambda: machine,
        "platform.system": lambda: "Linux",
        # the set is installed into a virtual environment: Python's user site-packages is off there,
        # its prefix is three folders above site-packages (<prefix>/lib/pythonX.Y/site-packages), and
        # the interpreter it was made from is outside it
        "site.ENABLE_USER_SITE": False,
        "sys.prefix": "../../..",
        "sys.exec_prefix": "../../..",
        "sys.base_prefix": BASE_PREFIX,
        "sys.base_exec_prefix": BASE_PREFIX,
    }
    torch, source = _torch_values(wheels)
    values.update(torch)
    versions = {canonicalize_name(w.metadata.name): w.metadata.version for w in wheels}

    def dist_version(name: str) -> str:  # importlib.metadata.version of a distribution of the set
        found = versions.get(canonicalize_name(str(name)))
        if found is None:
            raise CannotEvaluate(f"importlib.metadata.version({name!r}): not a distribution of the set")
        return found

    values["importlib.metadata.version"] = dist_version
    values["packaging.version.Version"] = values["packaging.version.parse"] = _parsed_version
    cc = target.arch.cc if target.arch is not None else None
    if cc is not None and torch.get("torch.version.cuda"):  # the target's GPU, seen by a CUDA torch
        values["torch.cuda.get_device_capability"] = lambda *_device: cc
    return RuntimeValues(values, source)


def _parsed_version(text: Any) -> Version:
    try:
        return Version(str(text))
    except InvalidVersion:
        raise CannotEvaluate(f"Version({text!r}): not a version") from None


def evaluate(text: str, values: RuntimeValues) -> Any:
    """The value of one kept expression; :class:`CannotEvaluate` when it reads anything not fixed."""
    node = parse_expr(text)
    if node is None:
        raise CannotEvaluate(f"{text}: not an expression")
    try:
        return _eval(node, values)
    except CannotEvaluate:
        raise
    except Exception as exc:  # the expression itself would raise (a KeyError, an IndexError ...)
        raise CannotEvaluate(f"{text}: raises {type(exc).__name__}") from exc


def names_read(text: str) -> list[str]:
    """The dotted names an expression reads (for saying which values it was computed from)."""
    tree = parse_expr(text)
    if tree is None:
        return []
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Name)) and (d := _dotted(node)) and "." in d and d not in out:
            out.append(d)
    return out


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _eval(node: ast.expr, values: RuntimeValues) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id == UNKNOWN_NAME:
        raise CannotEvaluate("an operand that is no value the set and the target fix")
    if isinstance(node, ast.Name) and node.id in _BUILTINS:
        return _BUILTINS[node.id]
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
        loop = node.generators[0]
        if not isinstance(loop.target, ast.Name):
            raise CannotEvaluate(f"{ast.unparse(node)}: not an expression abiprobe evaluates")
        out = []
        for item in list(_eval(loop.iter, values))[:_MAX_ITEMS]:
            inner = RuntimeValues({**values.values, loop.target.id: item}, values.torch_source)
            if all(_eval(i, inner) for i in loop.ifs):
                out.append(_eval(node.elt, inner))
        return out
    if isinstance(node, (ast.Name, ast.Attribute)):
        dotted = _dotted(node)
        if dotted is not None:
            return values.lookup(dotted)
        assert isinstance(node, ast.Attribute)
        return _attribute(_eval(node.value, values), node.attr, ast.unparse(node))
    if isinstance(node, ast.Call):
        return _call(node, values)
    if isinstance(node, ast.JoinedStr):
        return "".join(str(_eval(v, values)) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        value = _eval(node.value, values)
        convert: dict[int, Callable[[Any], str]] = {115: str, 114: repr, 97: ascii}
        if node.conversion in convert:
            value = convert[node.conversion](value)
        spec = "" if node.format_spec is None else str(_eval(node.format_spec, values))
        return format(value, spec)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, values), _eval(node.right, values))
    if isinstance(node, ast.BoolOp):
        result: Any = None
        unknown: CannotEvaluate | None = None
        for v in node.values:  # pure values: an operand that decides the answer decides it in any order
            try:
                result = _eval(v, values)
            except CannotEvaluate as exc:
                unknown = exc
                continue
            if isinstance(node.op, ast.And) and not result:
                return result
            if isinstance(node.op, ast.Or) and result:
                return result
        if unknown is not None:
            raise unknown
        return result
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        inner = _eval(node.operand, values)
        return (not inner) if isinstance(node.op, ast.Not) else -inner
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, values)
            if not COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, values) else node.orelse, values)
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_eval(k, values): _eval(v, values) for k, v in zip(node.keys, node.values, strict=True) if k}
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_eval(e, values) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Subscript):
        base = _eval(node.value, values)
        if isinstance(node.slice, ast.Slice):
            s = node.slice
            bounds = [None if b is None else _eval(b, values) for b in (s.lower, s.upper, s.step)]
            return base[slice(*bounds)]
        return base[_eval(node.slice, values)]
    raise CannotEvaluate(f"{ast.unparse(node)}: not an expression abiprobe evaluates")


def _call(node: ast.Call, values: RuntimeValues) -> Any:
    if isinstance(node.func, ast.Name) and node.func.id == EXISTS and len(node.args) == 1:
        path = _eval(node.args[0], values)
        found = bool(values.lookup(EXISTS)(path))
        missing = values.values.get(MISSING)
        if (
            not found
            and isinstance(missing, list)
            and isinstance(path, str)
            and names_read(ast.unparse(node))
        ):
            missing.append(path.rstrip("/"))  # a computed path the package tests for, absent from the set
        return found
    if isinstance(node.func, ast.Name) and node.func.id == OBJECT and not node.args:
        return _Object({k.arg: k.value for k in node.keywords if k.arg is not None}, values)
    if isinstance(node.func, ast.Name) and node.func.id == "hasattr" and len(node.args) == 2:
        owner, name = _eval(node.args[0], values), _eval(node.args[1], values)
        if isinstance(owner, _Namespace) and isinstance(name, str):
            dotted = f"{owner.name}.{name}"
            if any(k == dotted or k.startswith(f"{dotted}.") for k in values.values):
                return True
            raise CannotEvaluate(f"hasattr({owner.name}, {name!r}): not a value the set and the target fix")
        if not isinstance(owner, (*_SAFE, VersionInfo)) or not isinstance(name, str):
            raise CannotEvaluate(f"{ast.unparse(node)}: not a value abiprobe evaluates")
        return hasattr(owner, name)
    func = _eval(node.func, values)
    if not callable(func) or (isinstance(func, type) and func not in _BUILTINS.values()):
        raise CannotEvaluate(f"{ast.unparse(node.func)}: not a function abiprobe evaluates")
    args = [_eval(a, values) for a in node.args]
    kwargs = {k.arg: _eval(k.value, values) for k in node.keywords if k.arg is not None}
    result = func(*args, **kwargs)
    if not isinstance(result, (*_SAFE, VersionInfo, _Object, Version)):
        raise CannotEvaluate(f"{ast.unparse(node)}: not a value abiprobe evaluates")
    return result


@functools.lru_cache(maxsize=256)
def _program(text: str) -> ast.Module | None:
    return parse_module(text)


class PackageRaises(CannotEvaluate):
    """The package's own code raises while a program runs (``name``: the exception's class)."""

    def __init__(self, name: str, message: str, kinds: frozenset[str] = frozenset()) -> None:
        super().__init__(f"the package's code raises {name}" + (f": {message}" if message else ""))
        self.name, self.message = name, message
        self.kinds = kinds or frozenset({name.rsplit(".", 1)[-1]})  # the names a handler catches it by


def evaluate_setup(
    program: str,
    module_path: str,
    values: RuntimeValues,
    files: Iterable[str] | None = None,
    decide: Callable[[str, str, bool], bool] | None = None,
) -> Any:
    """The value of a test a module computes before it (``setup`` of an ``if``,
    :mod:`abiprobe.binary.pyslice`), or of a load's path, run with ``values`` (``files``: the set's
    installed paths, for a program that searches them); :class:`CannotEvaluate` when it reads anything
    they do not fix, :class:`PackageRaises` when the package's own code raises on the way. ``decide``:
    whether a library the program loads on the way loads (:class:`abiprobe.binary.pyinterp.Interpreter`)."""
    tree = _program(program)
    if tree is None:
        raise CannotEvaluate("the test's program does not parse")
    interp = Interpreter(module_path, values.lookup, files=files or (), site=files is not None, decide=decide)
    try:
        interp.run(tree.body)
        return interp.plain(interp.env[TEST_NAME])
    except Unknown as exc:
        raise CannotEvaluate(str(exc)) from None
    except Raised as exc:
        raise PackageRaises(exc.name, exc.message, exc.kinds) from None
    except Exception as exc:  # a break outside a loop, an operation Python refuses
        raise CannotEvaluate(f"the test's program: {type(exc).__name__}") from None


@dataclass(frozen=True)
class CallRun:
    """What a call of the package's own function did when run (:func:`run_call`): the libraries it
    loaded, those that failed inside a handler and the modules it imported, in order (``(kind, name, api,
    line, module path)``, ``kind`` ``load``, ``failed`` or ``import``), whether it returned None, and
    the package's exception it raised (None: it returned), with its line and module."""

    trace: tuple[tuple[str, str, str, int, str], ...]
    returned_none: bool
    raised: PackageRaises | None = None
    raised_line: int = 0
    raised_path: str = ""


def run_call(
    program: str,
    module_path: str,
    values: RuntimeValues,
    files: Iterable[str],
    decide: Callable[[str, str, bool], bool],
) -> CallRun:
    """Run a call program (:func:`abiprobe.binary.pyslice.call_program`) with the set's installed
    ``files`` and the loader's answer for each library it loads (``decide``); :class:`CannotEvaluate` when
    it reads anything the set and the target do not fix, or a load's outcome would decide its way and
    cannot be known here."""
    tree = _program(program)
    if tree is None:
        raise CannotEvaluate("the call's program does not parse")
    interp = Interpreter(module_path, values.lookup, files=files, site=True, decide=decide)
    try:
        interp.run(tree.body)
    except Unknown as exc:
        raise CannotEvaluate(str(exc)) from None
    except Raised as exc:
        raised = PackageRaises(exc.name, exc.message, exc.kinds)
        return CallRun(tuple(interp.trace), False, raised, exc.line, exc.path)
    except RecursionError:
        raise CannotEvaluate("the call's program nests deeper than abiprobe follows") from None
    except Exception as exc:  # a break outside a loop, an operation Python refuses
        raise CannotEvaluate(f"the call's program: {type(exc).__name__}") from None
    return CallRun(tuple(interp.trace), interp.env.get(TEST_NAME) is None)


def with_files(
    values: RuntimeValues, files: Iterable[str], missing: list[str] | None = None
) -> RuntimeValues:
    """``values`` plus the test of whether the set installs a path (``path.exists()`` in the package's
    code, kept as ``__abiprobe_exists__(path)``): a file or a folder of ``files``, or a glob matching one.
    ``missing``, when given, collects each path computed from run-time values that the test finds absent
    (``libfoo_cuda130.so`` beside a CUDA 13.0 torch: the package falls back from it)."""
    have = frozenset(files)
    folders = frozenset(f.rsplit("/", i)[0] for f in have for i in range(1, f.count("/") + 1))

    def exists(path: str) -> bool:
        path = path.rstrip("/")
        if "*" in path:
            from abiprobe.analyze.preloads import install_glob

            rx = install_glob(path)
            return any(rx.fullmatch(f) for f in have)
        return path in have or path in folders

    more: dict[str, Any] = {EXISTS: exists}
    if missing is not None:
        more[MISSING] = missing
    return RuntimeValues({**values.values, **more}, values.torch_source)


def substitute(pattern: str, values: RuntimeValues) -> tuple[str, str]:
    """``pattern`` with each ``{=expr=}`` replaced by its value, and the values it was computed from
    (``torch.version.cuda='13.0'``); :class:`CannotEvaluate` when one cannot be evaluated."""
    read: list[str] = []

    def one(m: re.Match[str]) -> str:
        value = evaluate(m.group(1), values)
        if isinstance(value, bool) or not isinstance(value, (str, int)):  # a list, None, an object
            raise CannotEvaluate(f"{m.group(1)} gives {type(value).__name__}, not a part of a file name")
        read.extend(n for n in names_read(m.group(1)) if n not in read)
        return str(value)

    text = TOKEN.sub(one, pattern)
    return text, values.described(read)


__all__ = [
    "MISSING",
    "TOKEN",
    "CallRun",
    "CannotEvaluate",
    "PackageRaises",
    "RuntimeValues",
    "evaluate",
    "evaluate_setup",
    "run_call",
    "runtime_values",
    "substitute",
    "with_files",
]
