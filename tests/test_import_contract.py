"""The import contract: layers declared in order, each importing only its own layer and those below it.

The layers are data (``LAYERS`` below, lowest first): the shared leaf helpers, then the pure core (``model``
-> ``binary`` -> ``analyze`` -> ``solve`` -> ``report``), then the edges (``installers`` -> ``ui`` ->
``net`` -> ``store`` -> ``index`` -> ``host`` -> ``probe`` -> ``cli`` -> ``commands`` -> ``__main__``).
Every abiprobe module is in exactly one of them. Imports are read with ``ast`` from the source,
function-level and ``TYPE_CHECKING`` imports included, so a lazy import cannot hide an upward one; and the
packages' import graph has no cycle. ``ALLOWED`` names each upward import still standing, with why; it may
only shrink: an entry that no longer occurs fails the test.

Why the edges are in this order (each imports only those before it):

- ``installers``: the user's pip and uv configuration, read from files and the environment; nothing else.
- ``ui``: the terminal (console, progress display, help layout) and how a signal stops the run, which
  every edge that makes temporary files or child processes uses (``store.primitives``, ``net.http``).
- ``net``: HTTP, ``file://``, range reads of remote wheels (the installer's proxy and TLS settings).
- ``store``: ``wheel_index_cache/`` and this machine's state; what it keeps is read through ``net``.
- ``index``: index pages, fetched through ``net`` and kept in ``store``.
- ``host``: this machine's installed environments, local wheel files (their facts kept in ``store``),
  snapshots (which name the default ``index``).
- ``probe``: venvs and subprocesses over what ``host``, ``net`` and ``store`` give it.
- ``cli``: argv; it finds a command module by name at run time (``importlib``), so it imports none of them.
- ``commands``: one module per command, wiring the edges into the core; ``__main__`` runs ``cli``.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "abiprobe"

# (layer, module prefixes), lowest first. "abiprobe.analyze" covers the package and every module under it;
# the longest prefix that covers a module decides its layer.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # leaf helpers with no I/O of their own that every layer uses: TOML text -> dict (config and stack
    # files), and pip's default registry, asked of a pip (the hosts model.hosts tokenises)
    (
        "shared",
        (
            "abiprobe",
            "abiprobe.errors",
            "abiprobe.log",
            "abiprobe.installers.toml",
            "abiprobe.installers.registry",
        ),
    ),
    # the core, pure: given values, never readers
    ("model", ("abiprobe.model",)),  # frozen values: facts, verdicts, target, stack, arch rules, CUDA variant
    ("binary", ("abiprobe.binary",)),  # readers over bytes or a bounded stream: ELF, CUDA, zip, wheels
    ("analyze", ("abiprobe.analyze",)),  # loader simulation, checks, explanations
    ("solve", ("abiprobe.solve",)),  # candidates, matrix, resolver, closure, lock; reads through its ports
    ("report", ("abiprobe.report",)),  # documents -> JSON / Markdown / HTML / TOML / rich renderables
    # the edges
    ("installers", ("abiprobe.installers",)),
    ("ui", ("abiprobe.ui",)),
    ("net", ("abiprobe.net",)),
    ("store", ("abiprobe.store",)),
    ("index", ("abiprobe.index",)),
    ("host", ("abiprobe.host",)),
    ("probe", ("abiprobe.probe",)),
    ("cli", ("abiprobe.cli",)),
    ("commands", ("abiprobe.commands",)),
    ("main", ("abiprobe.__main__",)),
)
CORE = ("model", "binary", "analyze", "solve", "report")

# (module, module of a higher layer it imports): each a violation still standing, with why. May only shrink.
ALLOWED: frozenset[tuple[str, str]] = frozenset()


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> int | None:
    """The rank (0 lowest) of the layer a module belongs to: the longest declared prefix that covers it."""
    covering = [
        (len(prefix), rank)
        for rank, (_name, prefixes) in enumerate(layers)
        for prefix in prefixes
        if (prefix == module if prefix == "abiprobe" else _within(module, prefix))
    ]
    return max(covering)[1] if covering else None


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    base = module.split(".")
    if not is_package:
        base.pop()
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def imported_modules(root: Path, path: Path, known: set[str] | None = None) -> Iterator[tuple[str, int]]:
    """Every abiprobe module ``path`` imports, anywhere in its body, with the line."""
    module = module_name(root, path)
    is_package = path.name == "__init__.py"
    if known is None:
        known = {module_name(root, p) for p in root.rglob("*.py")}
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == root.name:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve_relative(module, is_package, node.level, node.module)
            else:
                base = node.module or ""
            if base.split(".")[0] != root.name:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield (sub if sub in known else base), node.lineno


def import_graph(root: Path = PACKAGE_ROOT) -> dict[str, set[str]]:
    """Module -> the abiprobe modules it imports (lazy imports too), itself left out."""
    paths = sorted(root.rglob("*.py"))
    known = {module_name(root, p) for p in paths}
    return {
        module_name(root, p): {m for m, _ in imported_modules(root, p, known)} - {module_name(root, p)}
        for p in paths
    }


def violations(
    root: Path = PACKAGE_ROOT, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS
) -> set[tuple[str, str]]:
    """(module, imported module) for each import of a higher layer than the importer's."""
    found: set[tuple[str, str]] = set()
    for importer, imported in import_graph(root).items():
        rank = layer_of(importer, layers)
        for target in imported:
            other = layer_of(target, layers)
            if rank is not None and other is not None and other > rank:
                found.add((importer, target))
    return found


def package_of(module: str) -> str:
    """``abiprobe.solve.matrix`` -> ``abiprobe.solve``; a top-level module (``abiprobe.cli``) is its own."""
    return ".".join(module.split(".")[:2])


def package_graph(root: Path = PACKAGE_ROOT) -> dict[str, set[str]]:
    """Package -> the packages its modules import (not the root package: it holds only the version)."""
    graph: dict[str, set[str]] = {}
    for importer, imported in import_graph(root).items():
        here = package_of(importer)
        graph.setdefault(here, set()).update(package_of(m) for m in imported)
    return {p: deps - {p, root.name} for p, deps in graph.items() if p != root.name}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more nodes of ``graph`` (Tarjan), each sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for nxt in sorted(graph[node] & graph.keys()):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            group = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return found


def import_cycles(root: Path = PACKAGE_ROOT) -> list[list[str]]:
    """Modules that import each other back, directly or through others."""
    return cycles(import_graph(root))


def package_cycles(root: Path = PACKAGE_ROOT) -> list[list[str]]:
    """Packages that import each other back, directly or through others."""
    return cycles(package_graph(root))


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "abiprobe"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data", "schemas"))
    return copy


def _plant(copy: Path, module: str, statement: str) -> None:
    victim = copy / f"{module}.py"
    victim.write_text(victim.read_text(encoding="utf-8") + "\n" + statement, encoding="utf-8")


def test_every_module_has_a_layer() -> None:
    # GIVEN every module of the package
    modules = {module_name(PACKAGE_ROOT, p) for p in PACKAGE_ROOT.rglob("*.py")}
    # THEN each is in a declared layer, so a new module cannot slip past the contract
    assert sorted(m for m in modules if layer_of(m) is None) == []


def test_the_core_comes_first_and_in_order() -> None:
    # GIVEN the declared layers THEN the core's are model, binary, analyze, solve, report, in that order,
    # right after the shared helpers, so no core module may import an edge
    assert tuple(name for name, _ in LAYERS[1:6]) == CORE


def test_no_module_imports_a_higher_layer_beyond_the_allow_list() -> None:
    # GIVEN the package as it is WHEN every import of every module is read
    found = violations()
    # THEN nothing outside the allow-list imports a higher layer, and every allow-list entry still occurs
    assert sorted(found - ALLOWED) == []
    assert sorted(ALLOWED - found) == [], "fixed violations must leave the allow-list"


@pytest.mark.parametrize(
    ("module", "statement"),
    [
        ("analyze/checks", "from abiprobe.net.http import Http\n"),  # core -> edge
        ("analyze/checks", "from abiprobe.solve import matrix\n"),  # core -> a higher core layer
        ("model/verdict", "import abiprobe.binary.elf\n"),
        ("solve/matrix", "def later() -> None:\n    from abiprobe.report import matrix_md\n"),  # lazy
        ("analyze/checks", "from ..commands import solve\n"),  # relative
        (
            "net/http",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from abiprobe.store import cache\n",
        ),
        ("store/cache", "from abiprobe.index import client\n"),  # edge -> a higher edge
    ],
)
def test_a_deliberate_upward_import_is_caught(tmp_path: Path, module: str, statement: str) -> None:
    # GIVEN a copy of the package in which one module imports a higher layer (top-level, lazy, relative or
    # for type checking only)
    copy = _copy(tmp_path)
    _plant(copy, module, statement)
    # WHEN the contract is checked on the copy THEN the new import is reported, and nothing else
    assert len(violations(copy) - violations(PACKAGE_ROOT)) == 1


def test_no_module_imports_itself_back() -> None:
    # GIVEN the import graph of the package, function-level imports included THEN it has no cycle
    assert import_cycles() == []


def test_no_package_imports_itself_back() -> None:
    # GIVEN the packages' import graph (a package imports another when one of its modules does) THEN it has
    # no cycle: no two packages lean on each other, even through modules that do not form a cycle
    assert package_cycles() == []


def test_a_deliberate_module_cycle_is_caught(tmp_path: Path) -> None:
    # GIVEN a copy in which the job runner imports the probe command that imports it
    copy = _copy(tmp_path)
    _plant(copy, "probe/job_runner", "from abiprobe.commands import probe\n")
    # THEN the cycle is reported
    assert ["abiprobe.commands.probe", "abiprobe.probe.job_runner"] in import_cycles(copy)


def test_a_deliberate_package_cycle_is_caught(tmp_path: Path) -> None:
    # GIVEN a copy in which the HTTP client imports the store's page cache, while the store reads through
    # the HTTP client: no module imports itself back (cache.py does not import http.py), the packages do
    copy = _copy(tmp_path)
    _plant(copy, "net/http", "def later() -> None:\n    from abiprobe.store import cache\n")
    assert import_cycles(copy) == import_cycles(PACKAGE_ROOT)
    # THEN the packages' cycle is reported, and so is the upward import that makes it
    assert ["abiprobe.net", "abiprobe.store"] in package_cycles(copy)
    assert ("abiprobe.net.http", "abiprobe.store.cache") in violations(copy)


def test_a_package_cycle_within_one_layer_is_caught() -> None:
    # GIVEN a graph of two packages of one layer that lean on each other THEN the checker names them
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": set()}) == [["a", "b"]]
