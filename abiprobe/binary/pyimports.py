"""A module's name and the imports its top-level code runs, read from its import lines without parsing
(for the modules :mod:`abiprobe.binary.pysource` does not parse: those that name no load call)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from abiprobe.model.facts import PyEvent, PyModule

_IMPORT = re.compile(r"^([ \t]*)(from|import)[ \t]+(.*)$", re.M)


def module_name(path: str) -> str | None:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; ``pkg/__init__.py`` -> ``pkg``; None outside packages."""
    if not path.endswith(".py") or ("/" not in path and path == "__init__.py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def scan_imports(path: str, source: bytes) -> PyModule | None:
    """The imports a module's top-level code runs, read from its import lines (not parsed): an indented
    import runs at import unless a ``def`` encloses it; text inside triple-quoted strings is skipped. An
    import inside a ``try:`` body is kept inside a ``try`` event with the names its ``except`` clauses
    catch (``try: from ._speedups import escape`` / ``except ImportError:``: a failure the package goes
    on from)."""
    name = module_name(path)
    if name is None:
        return None
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    text = source.decode("utf-8", "replace")
    events: list[PyEvent] = []
    quotes = {'"""': 0, "'''": 0}
    last, number = 0, 1
    for m in _IMPORT.finditer(text):
        for q in quotes:
            quotes[q] += text.count(q, last, m.start())
        number += text.count("\n", last, m.start())
        last = m.start()
        if any(n % 2 for n in quotes.values()) or (
            m.group(1) and _in_function(text, m.start(), len(m.group(1)))
        ):
            continue
        caught = _caught_by(text, m.start(), len(m.group(1))) if m.group(1) else None
        found: list[PyEvent] = []
        if m.group(2) == "from":
            module, _, names = m.group(3).partition(" import ")
            if "(" in names and ")" not in names:
                close = text.find(")", m.end())
                names += text[m.end() : close if close >= 0 else m.end()]
            base = absolute(module.strip(), package)
            for n in re.sub(r"#[^\n]*", "", names).replace("(", " ").replace(")", " ").split(","):
                target = n.strip().split(" as ")[0].strip()
                if target.isidentifier():
                    found.append(PyEvent("import", f"{base}.{target}", line=number))
                elif target == "*":
                    found.append(PyEvent("import", base, line=number))
        else:
            for n in m.group(3).split("#")[0].split(","):
                target = n.strip().split(" as ")[0].strip()
                if target and all(p.isidentifier() for p in target.split(".")):
                    found.append(PyEvent("import", target, line=number))
        if caught and found:
            handler = PyEvent("except", ",".join(caught[1]), line=number)
            events.append(PyEvent("try", "", line=caught[0], body=tuple(found), orelse=(handler,)))
        else:
            events += found
    return PyModule(name, path, tuple(events), (), scanned=False)


def _caught_by(text: str, at: int, indent: int) -> tuple[int, tuple[str, ...]] | None:
    """The innermost ``try:`` whose body holds the line at ``at`` (indented by ``indent``): its line and
    the exception names its ``except`` clauses catch (``BaseException`` for a bare one); None when no
    ``try`` encloses it, or its clauses catch nothing (a ``try`` with ``finally`` alone)."""
    for start, depth, body in _enclosing(text, at, indent):
        if body.rstrip().startswith("try:"):
            names = _handler_names(text, at, depth)
            return (text.count("\n", 0, start) + 1, names) if names else None
    return None


def _handler_names(text: str, after: int, depth: int) -> tuple[str, ...]:
    """The names the ``except`` clauses at ``depth`` after position ``after`` catch (the clauses of the
    ``try`` whose body ``after`` is in)."""
    names: list[str] = []
    for line in text[after:].splitlines()[1:]:
        body = line.lstrip(" \t")
        if not body or body.startswith("#") or len(line) - len(body) > depth:
            continue
        if len(line) - len(body) < depth or not body.startswith("except"):
            if names or not body.startswith(("else", "finally")):
                break
            continue
        clause = body[len("except") :].split(":", 1)[0].split(" as ")[0].strip(" ()*")
        if not clause:
            names.append("BaseException")
        else:
            names += [c.strip().rsplit(".", 1)[-1] for c in clause.split(",") if c.strip()]
    return tuple(dict.fromkeys(names))


def _in_function(text: str, at: int, indent: int) -> bool:
    """Whether the line at ``at`` (indented by ``indent``) lies in a ``def``."""
    return any(body.startswith(("def ", "async def ")) for _, _, body in _enclosing(text, at, indent))


def _enclosing(text: str, at: int, indent: int) -> Iterator[tuple[int, int, str]]:
    """The lines whose blocks hold the line at ``at`` (indented by ``indent``), innermost first: the
    nearest lines above it with less indentation, read back to the first one at column 0; each as its
    start, its indentation and its text."""
    end = at
    while indent > 0 and end > 0:
        start = text.rfind("\n", 0, end - 1) + 1
        line = text[start : end - 1] if end - 1 > start else ""
        end = start
        body = line.lstrip(" \t")
        depth = len(line) - len(body)
        if not body or body.startswith("#") or depth >= indent:
            continue
        yield start, depth, body
        indent = depth


def absolute(module: str, package: str) -> str:
    level = len(module) - len(module.lstrip("."))
    rest = module.lstrip(".")
    if not level:
        return rest
    anchor = package.split(".")
    anchor = anchor[: len(anchor) - (level - 1)] if level > 1 else anchor
    return ".".join([*anchor, *([rest] if rest else [])])


__all__ = ["absolute", "module_name", "scan_imports"]
