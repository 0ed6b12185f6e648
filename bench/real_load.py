"""Run inside a set's venv: import torch and a package, then its first-use loads; print every load as JSON.

Stdlib only (the venv has the set's wheels and nothing else). Every ``ctypes.CDLL`` (which
``torch.ops.load_library`` and ``ctypes.cdll.LoadLibrary`` go through) and every extension-module load is
recorded with its phase, path and the loader's message; the package's own behaviour is unchanged (the
error is re-raised). Usage: ``python real_load.py SPEC_JSON`` where the spec holds ``module`` and
``first_use`` (a list of ``[label, python source]``).
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.machinery
import json
import sys
import traceback
from typing import Any

ATTEMPTS: list[dict[str, Any]] = []
PHASE = ["torch"]


def _record(via: str, path: object, error: BaseException | None) -> None:
    ATTEMPTS.append(
        {"phase": PHASE[0], "via": via, "path": str(path), "ok": error is None, "error": _text(error)}
    )


def _text(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"


_cdll_init = ctypes.CDLL.__init__


def _traced_cdll_init(self: ctypes.CDLL, name: Any, *args: Any, **kwargs: Any) -> None:
    try:
        _cdll_init(self, name, *args, **kwargs)
    except OSError as e:
        _record("ctypes", name, e)
        raise
    _record("ctypes", name, None)


_create_module = importlib.machinery.ExtensionFileLoader.create_module


def _traced_create_module(self: importlib.machinery.ExtensionFileLoader, spec: Any) -> Any:
    try:
        module = _create_module(self, spec)
    except ImportError as e:
        _record("extension", spec.origin, e)
        raise
    _record("extension", spec.origin, None)
    return module


ctypes.CDLL.__init__ = _traced_cdll_init  # type: ignore[method-assign]
importlib.machinery.ExtensionFileLoader.create_module = _traced_create_module  # type: ignore[method-assign]


def _chain(error: BaseException) -> list[str]:
    """The exception and its causes / contexts, outermost first."""
    out: list[str] = []
    seen: set[int] = set()
    cur: BaseException | None = error
    while cur is not None and id(cur) not in seen and len(out) < 8:
        seen.add(id(cur))
        out.append((_text(cur) or "")[:2000])
        cur = cur.__cause__ or cur.__context__
    return out


def _step(label: str, source: str) -> dict[str, Any]:
    PHASE[0] = label
    try:
        exec(compile(source, f"<{label}>", "exec"), {"__name__": "__probe__"})
    except BaseException as e:
        return {"phase": label, "ok": False, "error": _chain(e), "trace": traceback.format_exc()[-3000:]}
    return {"phase": label, "ok": True, "error": []}


def main() -> None:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    steps = [_step("torch", "import torch")]
    if steps[0]["ok"]:
        steps.append(_step("import", f"import {spec['module']}"))
        if steps[1]["ok"]:
            steps += [_step(f"first_use:{label}", src) for label, src in spec.get("first_use", [])]
    module = sys.modules.get(spec["module"])
    where = getattr(module, "__file__", None) or ""
    print(json.dumps({"steps": steps, "attempts": ATTEMPTS, "module_file": where}))


if __name__ == "__main__":
    main()
