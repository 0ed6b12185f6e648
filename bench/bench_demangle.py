"""The pure demangler against libstdc++'s ``__cxa_demangle`` (ctypes) on every stored wheel's C++ symbols.

Reports the corpus (distinct mangled dynamic symbols of the wheels whose facts are committed under
``wheel_index_cache/``), how many each demangler reads, mismatches where both answer (must be 0), names
libstdc++ reads and we leave unchanged (by the construct that stops us), and the time per name of each,
uncached (median and mean over the corpus, one pass each).

    python bench/bench_demangle.py [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from support.cxxcorpus import cached_wheel_symbols, libstdcxx_demangler  # noqa: E402

from abiprobe.model import cxxnames  # noqa: E402


def _timed(fn: Callable[[str], str | None], names: list[str]) -> tuple[list[str | None], list[float]]:
    out: list[str | None] = []
    times: list[float] = []
    for name in names:
        start = time.perf_counter()
        out.append(fn(name))
        times.append(time.perf_counter() - start)
    return out, times


def _blocker(name: str) -> str:
    """The two-letter construct at which the pure parser stops (what kind of name it leaves unchanged)."""
    parser = cxxnames._Parser(name)
    try:
        parser.mangled_name(True)
    except cxxnames._Fail:
        return name[parser.i : parser.i + 2] or "end"
    return "printing"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    oracle = libstdcxx_demangler()
    if oracle is None:
        print("libstdc++ is not loadable here: no oracle to compare with", file=sys.stderr)
        return 2
    names = sorted({n.partition("@")[0] for ns in cached_wheel_symbols().values() for n in ns})
    theirs, their_times = _timed(oracle, names)
    ours, our_times = _timed(cxxnames._demangle_base, names)
    mismatches = [n for n, a, b in zip(names, ours, theirs, strict=True) if a is not None and a != b]
    unread = [n for n, a, b in zip(names, ours, theirs, strict=True) if a is None and b is not None]
    read_by_them = sum(1 for b in theirs if b is not None)
    report = {
        "corpus": len(names),
        "libstdcxx_reads": read_by_them,
        "pure_reads": sum(1 for a in ours if a is not None),
        "mismatches": len(mismatches),
        "unread_that_libstdcxx_reads": len(unread),
        "coverage_of_libstdcxx": round((read_by_them - len(unread)) / max(read_by_them, 1), 5),
        "unread_by_construct": dict(Counter(_blocker(n) for n in unread).most_common()),
        "pure_us_per_name": {
            "median": round(statistics.median(our_times) * 1e6, 1),
            "mean": round(statistics.fmean(our_times) * 1e6, 1),
        },
        "ctypes_us_per_name": {
            "median": round(statistics.median(their_times) * 1e6, 1),
            "mean": round(statistics.fmean(their_times) * 1e6, 1),
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:30} {value}")
        for name in mismatches[:5]:
            print("MISMATCH", name)
    return 0 if not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
