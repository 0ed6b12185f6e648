"""The digest of the code a stored result depends on, derived from the code itself.

A stored analysis or resolution is keyed by :func:`code_digest` of its entry modules: the bytes of every
abiprobe module in their import closure (read statically from the source: ``import``, ``from … import``,
relative imports, the parent packages Python runs first, ``importlib.import_module("abiprobe.…")`` with a
literal name) and of the package data under ``abiprobe/data``. Editing any module a verdict can depend on
changes the key, so an old stored verdict becomes a miss; nothing is listed by hand.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import re
from pathlib import Path

PACKAGE = "abiprobe"
_ROOT = Path(__file__).resolve().parent.parent  # the abiprobe package


@functools.lru_cache(maxsize=8)
def _package_files(root: Path) -> frozenset[str]:
    """Every file under ``root``, as a POSIX path relative to it: listed once, so that looking a module
    up is a set lookup (a solve looks up a few hundred names that read like modules, most of them not)."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, root).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        found.update(prefix + f for f in files)
    return frozenset(found)


@functools.lru_cache(maxsize=4096)
def _module_file(name: str, root: Path = _ROOT) -> Path | None:
    """The source file of an abiprobe module or package, None when there is none."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    files = _package_files(root)
    base = "/".join(parts[1:])
    package = f"{base}/__init__.py" if base else "__init__.py"
    for candidate in (f"{base}.py" if len(parts) > 1 else None, package):
        if candidate is not None and candidate in files:
            return root.joinpath(*candidate.split("/"))
    return None


def _is_package(name: str, root: Path) -> bool:
    f = _module_file(name, root)
    return f is not None and f.name == "__init__.py"


# What may import a module, found by pattern rather than by parsing (parsing every module on each run cost
# a warm solve a tenth of a second): anything that reads like an import counts, in code, strings or
# comments alike, so the patterns can only add modules to the closure, never miss one the parser would see
# (tests/test_code_digest.py holds them to the parser over every module).
_FROM = re.compile(r"\bfrom\s+(\.*[\w.]*)\s+import\s*(\([^)]*\)|[^\n]*)")
_IMPORT = re.compile(r"\bimport\s+((?:[\w.]+(?:\s+as\s+\w+)?\s*,\s*)*[\w.]+)")
_IMPORT_MODULE = re.compile(r"\bimport_module\(\s*[\"']([\w.]+)[\"']")
_NAME = re.compile(r"[\w.]+")


def _import_lines(source: str) -> str:
    """The lines that say ``import`` (backslash continuations joined first), each with the lines an open
    parenthesis carries it over (parentheses in strings only carry more lines along). Found by searching
    for the word, not by walking every line (a solve reads some fifty modules, most lines say nothing)."""
    text = "\n".join(source.replace("\\\n", " ").splitlines())  # one "\n" between lines, as splitlines cuts
    out: list[str] = []
    at = text.find("import")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[start:end]
        depth = line.count("(") - line.count(")")
        out.append(line)
        while depth > 0 and end < len(text):  # the lines an open parenthesis carries along
            nxt = text.find("\n", end + 1)
            nxt = len(text) if nxt < 0 else nxt
            line = text[end + 1 : nxt]
            depth += line.count("(") - line.count(")")
            out.append(line)
            end = nxt
        at = text.find("import", end + 1)
    return "\n".join(out)


def _imports(name: str, source: str, root: Path) -> set[str]:
    """abiprobe modules one module's source may import (anywhere in it, at any depth)."""
    package = name if _is_package(name, root) else name.rpartition(".")[0]
    found: set[str] = set()
    source = _import_lines(source)
    for match in _FROM.finditer(source):
        module, names = match.groups()
        level = len(module) - len(module.lstrip("."))
        if level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (level - 1)]
            base = ".".join([*anchor, *([module[level:]] if module[level:] else [])])
        else:
            base = module
        found.add(base)
        found.update(f"{base}.{n}" for n in _NAME.findall(names))
    for match in _IMPORT.finditer(source):
        found.update(_NAME.findall(match.group(1)))
    found.update(_IMPORT_MODULE.findall(source))
    return {m for m in found if m.split(".")[0] == PACKAGE and _module_file(m, root) is not None}


def _parsed_imports(name: str, source: str, root: Path) -> set[str]:
    """What :func:`_imports` finds, the parser's way (the reference the patterns are tested against)."""
    package = name if _is_package(name, root) else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            arg = node.args[0]
            if called == "import_module" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.add(arg.value)
    return {m for m in found if m.split(".")[0] == PACKAGE and _module_file(m, root) is not None}


@functools.lru_cache(maxsize=1024)
def _module_imports(name: str, root: Path) -> frozenset[str]:
    """:func:`_imports` of one module's file, read once per run (each stored result's closure shares most)."""
    path = _module_file(name, root)
    return frozenset() if path is None else frozenset(_imports(name, path.read_text(encoding="utf-8"), root))


def import_closure(entries: tuple[str, ...], root: Path = _ROOT) -> tuple[str, ...]:
    """Every abiprobe module importing ``entries`` may run, with the packages above each, sorted."""
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name, root)
        if path is None:
            continue
        seen.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(_module_imports(name, root) - seen)
    return tuple(sorted(seen))


def closure_files(entries: tuple[str, ...], root: Path = _ROOT) -> tuple[Path, ...]:
    """The source files of :func:`import_closure` and every package data file, in a stable order."""
    files = {p for m in import_closure(entries, root) if (p := _module_file(m, root)) is not None}
    data = root / "data"
    if data.is_dir():
        files.update(p for p in data.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return tuple(sorted(files, key=lambda p: p.relative_to(root).as_posix()))


@functools.cache
def code_digest(*entries: str) -> str:
    """sha256 over the path and bytes of each file :func:`closure_files` names for ``entries``."""
    h = hashlib.sha256()
    for path in closure_files(tuple(entries)):
        h.update(path.relative_to(_ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()
