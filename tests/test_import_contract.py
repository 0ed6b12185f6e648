"""The import contract: the pure core never imports an edge (network, cache, host, probe, CLI).

The layers are data (``CORE`` and ``EDGE`` below); every abiprobe module is in exactly one of them or in
``SHARED`` (leaf helpers both sides use). Imports are read with ``ast`` from the source, function-level
and ``TYPE_CHECKING`` imports included, so a lazy import cannot hide an edge. ``ALLOWED`` names each
violation still standing, with why; it may only shrink: an entry that no longer occurs fails the test.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "abiprobe"

# Module prefixes: "abiprobe.analyze" covers the package and every module under it.
CORE: tuple[str, ...] = (
    "abiprobe.model",  # frozen values: facts, verdicts, target, candidates, requirements, hosts
    "abiprobe.binary",  # pure readers over bytes or a bounded stream: ELF, CUDA, zip, Python source
    "abiprobe.analyze",  # loader simulation, checks, explanations
    "abiprobe.solve",  # candidates, matrix, resolver, closure, lock; reads through the ports it declares
    "abiprobe.report",  # documents -> JSON / Markdown / HTML / rich renderables
)

EDGE: tuple[str, ...] = (
    "abiprobe.net",  # HTTP, range reads, file:// transport, TLS/proxy configuration
    "abiprobe.store",  # wheel_index_cache/ with its one cache-first read, and this machine's own state
    "abiprobe.index",  # index pages, the index client, picking an item's wheel from a listing
    "abiprobe.installers",  # pip and uv configuration
    "abiprobe.host",  # installed environments, local wheels and trees, ldconfig, snapshots
    "abiprobe.probe",  # venvs, subprocesses, jobs
    "abiprobe.ui",  # the terminal: console, progress, help layout
    "abiprobe.cli",  # argv
    "abiprobe.commands",  # wiring and printing, one module per command
    "abiprobe.__main__",
)

# Leaf helpers with no I/O of their own that both sides use.
SHARED: tuple[str, ...] = (
    "abiprobe",
    "abiprobe.errors",
    "abiprobe.log",
    "abiprobe.installers.toml",  # TOML text -> dict, the one TOML reader (config files and stack files)
    # pip's default registry, asked of a pip (here, else one on PATH): the hosts model.hosts tokenises
    "abiprobe.installers.registry",
)

# (core module, edge module it imports): each a violation still standing. May only shrink.
ALLOWED: frozenset[tuple[str, str]] = frozenset()


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str, core: tuple[str, ...] = CORE, edge: tuple[str, ...] = EDGE) -> str | None:
    """The layer a module belongs to: the longest declared prefix that covers it wins."""
    if module == "abiprobe":
        return "shared"
    covering = [
        (len(prefix), layer)
        for layer, prefixes in (("core", core), ("edge", edge), ("shared", SHARED))
        for prefix in prefixes
        if prefix != "abiprobe" and _within(module, prefix)
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


def imported_modules(root: Path, path: Path) -> Iterator[tuple[str, int]]:
    """Every abiprobe module ``path`` imports, anywhere in its body, with the line."""
    module = module_name(root, path)
    is_package = path.name == "__init__.py"
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


def violations(
    root: Path = PACKAGE_ROOT, core: tuple[str, ...] = CORE, edge: tuple[str, ...] = EDGE
) -> set[tuple[str, str]]:
    """(core module, edge module) for each import of an edge from the core."""
    found: set[tuple[str, str]] = set()
    for path in sorted(root.rglob("*.py")):
        importer = module_name(root, path)
        if layer_of(importer, core, edge) != "core":
            continue
        for imported, _line in imported_modules(root, path):
            if layer_of(imported, core, edge) == "edge":
                found.add((importer, imported))
    return found


def import_cycles(root: Path = PACKAGE_ROOT) -> list[list[str]]:
    """The strongly connected groups of two or more modules in the import graph (lazy imports too)."""
    graph = {
        module_name(root, p): {m for m, _ in imported_modules(root, p)} - {module_name(root, p)}
        for p in root.rglob("*.py")
    }
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

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
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return cycles


def test_every_module_has_a_layer() -> None:
    # GIVEN every module of the package
    modules = {module_name(PACKAGE_ROOT, p) for p in PACKAGE_ROOT.rglob("*.py")}
    # THEN each is declared core, edge or shared, so a new module cannot slip past the contract
    assert sorted(m for m in modules if layer_of(m) is None) == []


def test_the_core_imports_no_edge_beyond_the_allow_list() -> None:
    # GIVEN the package as it is WHEN every import of every core module is read
    found = violations()
    # THEN nothing outside the allow-list imports an edge, and every allow-list entry still occurs
    assert sorted(found - ALLOWED) == []
    assert sorted(ALLOWED - found) == [], "fixed violations must leave the allow-list"


@pytest.mark.parametrize(
    "statement",
    [
        "from abiprobe.net.http import Http\n",
        "import abiprobe.store.cache\n",
        "def later() -> None:\n    from abiprobe.probe import runner\n",
        "from ..commands import solve\n",
    ],
)
def test_a_deliberate_violation_is_caught(tmp_path: Path, statement: str) -> None:
    # GIVEN a copy of the package in which a core module imports an edge (top-level, lazy or relative)
    copy = tmp_path / "abiprobe"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data", "schemas"))
    victim = copy / "analyze" / "checks.py"
    victim.write_text(victim.read_text(encoding="utf-8") + "\n" + statement, encoding="utf-8")
    # WHEN the contract is checked on the copy THEN the new import is reported
    assert violations(copy) - violations(PACKAGE_ROOT)


def test_no_module_imports_itself_back() -> None:
    # GIVEN the import graph of the package, function-level imports included THEN it has no cycle
    assert import_cycles() == []


def test_a_deliberate_cycle_is_caught(tmp_path: Path) -> None:
    # GIVEN a copy in which the job runner imports the probe command that imports it
    copy = tmp_path / "abiprobe"
    shutil.copytree(PACKAGE_ROOT, copy, ignore=shutil.ignore_patterns("__pycache__", "data", "schemas"))
    victim = copy / "probe" / "job_runner.py"
    victim.write_text(victim.read_text(encoding="utf-8") + "\nfrom abiprobe.commands import probe\n")
    # THEN the cycle is reported
    assert ["abiprobe.commands.probe", "abiprobe.probe.job_runner"] in import_cycles(copy)
