"""The first error the real loader reports for a unit, worded as ld.so and Python print it.

ld.so stops at its first failure, in this order (glibc ``dl_open_worker``):

1. mapping the dependencies breadth first: the first DT_NEEDED that cannot be found gives
   ``libnvrtc.so.13: cannot open shared object file: No such file or directory``;
2. checking symbol versions of each new object in search-list order, version needs in file order:
   ``<provider>: version `GLIBC_2.34' not found (required by <object>)``;
3. relocating the new objects, dependencies first (:func:`abiprobe.analyze.loader.relocation_order`),
   each object's relocations in the order ld.so processes them with RTLD_NOW (DT_REL/DT_RELA, then
   DT_JMPREL): ``<object>: undefined symbol: <name>`` (``, version <v>`` for a versioned one).

Python raises ``ImportError`` with that text for an extension module it imports, ``OSError`` for a library
loaded by path through ctypes (``torch.ops.load_library``, ``ctypes.CDLL``). Paths the target decides are
written ``<site-packages>/…`` (the environment's site-packages) and ``<libdir>/…`` (the system library
directory of the target).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from abiprobe.analyze.layout import Layout
from abiprobe.analyze.loader import LoadResult, bound_imports

SITE = "<site-packages>"
PREFIX = "<prefix>"  # the environment's prefix (a venv's folder), above lib/pythonX.Y/site-packages
LIBDIR = "<libdir>"


@dataclass(frozen=True)
class LoaderMessage:
    """The loader's first error for one unit: the line Python prints, and how sure the order is."""

    text: str  # "ImportError: libfoo.so.1: cannot open shared object file: No such file or directory"
    kind: str  # "needed", "version" or "symbol"
    unit: str
    exact: bool = True  # False: relocation tables were not read, the symbol is one of those named
    # the call that loads the unit by path and where (``torch.ops.load_library at pkg/ext.py line 8``):
    # a caller may wrap the loader's line (torch re-raises it as "Could not load this library: <path>")
    via: str = ""
    # the package's own exception that follows the loader's line, the last line Python prints (a try-list
    # whose every candidate failed, a computed file it lacks): "RuntimeError: Could not load libfoo"
    raised: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "kind": self.kind, "unit": self.unit, "exact": self.exact}
        if self.via:
            out["via"] = self.via
        if self.raised:
            out["raised"] = self.raised
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoaderMessage:
        return cls(str(data["text"]), str(data["kind"]), str(data["unit"]), bool(data.get("exact", True)),
                   str(data.get("via", "")), str(data.get("raised", "")))  # fmt: skip


def site_path(path: str) -> str:
    """A site-packages-relative path as a message shows it: a file of the environment's prefix (a wheel's
    ``.data/data/lib``, ``../../x``) under ``<prefix>/lib``, not above site-packages."""
    if path.startswith("../../"):
        rest = path[len("../../") :]
        return f"{PREFIX}/{rest[3:]}" if rest.startswith("../") else f"{PREFIX}/lib/{rest}"
    return f"{SITE}/{path}"


def _path(provider: str) -> str:
    kind, sep, soname = provider.partition(":")
    if sep and kind in ("system", "driver"):
        return f"{LIBDIR}/{soname}"
    return site_path(provider)


def first_message(result: LoadResult, layout: Layout, *, by_path: bool = False) -> LoaderMessage | None:
    """What Python prints when loading the unit of ``result`` fails; None when it loads.

    ``by_path``: the unit is opened through ctypes (``OSError``), not imported (``ImportError``)."""
    raised = "OSError" if by_path else "ImportError"
    if result.missing_sonames:
        m = result.missing_sonames[0]
        text = f"{m.soname}: cannot open shared object file: No such file or directory"
        return LoaderMessage(f"{raised}: {text}", "needed", result.path)
    if result.missing_versions:
        v = result.missing_versions[0]
        text = f"{_path(v.provider)}: version `{v.version}' not found (required by {_path(v.requirer)})"
        return LoaderMessage(f"{raised}: {text}", "version", result.path)
    unbound = {(m.requirer, m.symbol.name) for m in result.missing_symbols}
    unbound |= {(d.requirer, d.name) for d in result.driver_symbols}
    for path in result.relocation_order:
        obj = layout.objects.get(path)
        if obj is None:
            continue
        first = next((i for i in bound_imports(obj.facts) if (path, i.name) in unbound), None)
        if first is None:
            continue
        version = f", version {first.version}" if first.version else ""
        text = f"{_path(path)}: undefined symbol: {first.name}{version}"
        return LoaderMessage(f"{raised}: {text}", "symbol", result.path, obj.facts.binding_order is not None)
    return None


def matches_loader_line(predicted: str, line: str) -> bool:
    """Whether a real loader line (paths cut to their site-packages-relative form, as the probe reports
    it; a demangled form may follow in parentheses) is the one ``predicted`` names."""
    body = predicted.split(": ", 1)[1] if predicted.startswith(("ImportError: ", "OSError: ")) else predicted
    for raised in ("ImportError: ", "OSError: "):
        line = line.removeprefix(raised)
    pattern = (
        re.escape(body)
        .replace(re.escape(f"{SITE}/"), "")
        .replace(re.escape(f"{LIBDIR}/"), r"(?:/\S*/)?")
        .replace(re.escape(f"{PREFIX}/"), r"(?:/\S*/)?")
    )
    return re.fullmatch(pattern + r"(?: \(.*\))?", line.strip()) is not None
