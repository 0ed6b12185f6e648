"""Core: static compatibility analysis: loader simulation over a wheel set, verdicts with explanations.

The core (``model``, ``binary``, ``analyze``, ``solve``, ``report``) never imports an edge (``net``,
``store``, ``index``, ``installers``, ``host``, ``probe``, ``ui``, ``commands``, the CLI): it is given
values, not readers. ``tests/test_import_contract.py`` enforces it, with no exceptions.
"""

from __future__ import annotations

from abiprobe.analyze.analysis import (
    AnalysisCache,
    SetAnalysis,
    UnitAnalysis,
    analyze_extension,
    analyze_set,
    extension_cache_key,
)
from abiprobe.analyze.layout import InstalledObject, Layout
from abiprobe.analyze.loader import LoaderSimulation, LoadResult

__all__ = [
    "AnalysisCache",
    "InstalledObject",
    "Layout",
    "LoadResult",
    "LoaderSimulation",
    "SetAnalysis",
    "UnitAnalysis",
    "analyze_extension",
    "analyze_set",
    "extension_cache_key",
]
