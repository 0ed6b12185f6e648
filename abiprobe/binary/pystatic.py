"""Values a module's top level computes that are known when the facts are read: constants, lists and
dicts, the package's own functions called on them, and the content of small files of the wheel
(``json.load(open(os.path.join(os.path.dirname(__file__), "target.json")))``, ``Path.read_text()``, a
glob of the wheel's files). :mod:`abiprobe.binary.pysource` uses them where its own reading of the code
stops: the items of a loop over such a value (unrolled when it binds several names), a call's arguments,
and the program a version guard is evaluated with (:mod:`abiprobe.binary.pyslice`)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from abiprobe.binary.pyinterp import MAX_STEPS, Interpreter, Opaque, Raised, Unknown, literal
from abiprobe.binary.pyslice import call_program, setup_program

MAX_UNROLLED = 64  # items of a loop unrolled at facts time
MAX_MODULE_STEPS = 200_000  # interpreter steps one module's top level may take in all
_NOTHING = Opaque("not known when the facts are read")


class StaticValues:
    """The facts-time state of one module's top level, statement by statement."""

    def __init__(self, interp: Interpreter) -> None:
        self.interp = interp
        self.overlay: dict[str, Any] = {}  # the names an unrolled loop binds, while its body is read
        self.budget = MAX_MODULE_STEPS

    def step(self, stmt: ast.stmt) -> None:
        """Run one top-level statement (once the module's budget is spent, what it binds is unknown)."""
        self.interp.steps = 0 if self.budget > 0 else MAX_STEPS
        self.interp.step(stmt)
        self.budget -= self.interp.steps

    def value(self, node: ast.expr) -> Any:
        """The value of ``node`` now, or an :class:`Opaque` one."""
        self.interp.steps = 0
        try:
            return self.interp.plain(self.interp.eval(node, self.overlay))
        except (Unknown, Raised, RecursionError, MemoryError):
            return _NOTHING
        except Exception:  # an operation of the package's code that Python itself would refuse
            return _NOTHING

    def items(self, node: ast.expr) -> list[Any] | None:
        """The items a loop over ``node`` runs, when known and at most :data:`MAX_UNROLLED`."""
        value = self.value(node)
        if isinstance(value, dict):
            value = list(value)
        if not isinstance(value, (list, tuple)) or len(value) > MAX_UNROLLED:
            return None
        return list(value)

    def bind(self, target: ast.expr, item: Any) -> dict[str, str] | None:
        """Bind a loop's names to one item (in the overlay); the names bound to strings, for the
        scanner's ``{name}`` text; None when the item does not unpack into the target."""
        scope: dict[str, Any] = {}
        try:
            self.interp.assign(target, item, scope)
        except (Unknown, Raised):
            return None
        self.overlay.update(scope)
        return {k: v for k, v in scope.items() if isinstance(v, str)}

    def literals(self) -> dict[str, str] | None:
        """The names an unrolled loop binds now, each as a Python literal; None when one is not plain."""
        out: dict[str, str] = {}
        for name, value in self.overlay.items():
            text = literal(value, 4096)
            if text is None:
                return None
            out[name] = text
        return out

    def argument(self, node: ast.expr) -> str | None:
        """A call's argument as the scanner's text: a string as itself, another plain value as a
        ``{=literal=}`` the planner evaluates; None when not known."""
        value = self.value(node)
        if isinstance(value, str):
            return value if "{" not in value and "*" not in value else None
        if isinstance(value, (bool, int, float, type(None))) and not isinstance(value, Opaque):
            return f"{{={value!r}=}}"
        text = literal(value, 512) if isinstance(value, (list, tuple, dict)) else None
        return f"{{={text}=}}" if text is not None and "=}" not in text else None

    def setup(self, test: ast.expr, earlier: Sequence[ast.stmt], block: Sequence[ast.stmt] = ()) -> str:
        """The program computing ``test`` (``block``: the statements of its enclosing blocks before it)."""
        return setup_program(test, earlier, self.interp.env, prefix=block)

    def call(self, call: ast.Call, earlier: Sequence[ast.stmt], block: Sequence[ast.stmt] = ()) -> str:
        """The program running ``call`` with the module's functions it reads (:func:`call_program`)."""
        return call_program(call, earlier, self.interp.env, prefix=block)


__all__ = ["MAX_UNROLLED", "StaticValues"]
