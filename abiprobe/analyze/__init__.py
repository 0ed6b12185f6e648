"""Static compatibility analysis: loader simulation over a wheel set, verdicts with explanations."""

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
