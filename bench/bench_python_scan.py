"""Reading a wheel's Python for what it loads (``scan_sources``), against parsing the same files.

The floor is ``ast.parse`` of every member the scan reads (the scan parses each at least once); the ratio
says how much the scan's own work adds. flashinfer-python 0.7.4 (3,562 members, 126 MB of Python) is the
wheel whose re-read under new rules took minutes; any wheel will do::

    python bench/bench_python_scan.py WHEEL [--under flashinfer/jit] [--limit N]

``--under`` / ``--limit`` scan a part of the wheel (a quicker loop while changing the scanner); the
sources are the wheel's Python members as the facts read them.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import resource
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abiprobe.binary.pysource import scan_sources  # noqa: E402
from abiprobe.binary.wheel import python_members  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("--under", default="", help="only members under this folder")
    ap.add_argument("--limit", type=int, default=0, help="only the first N members (sorted)")
    args = ap.parse_args()
    with zipfile.ZipFile(args.wheel) as zf:
        names = zf.namelist()
        members = sorted(n for n in python_members(names, frozenset()) if n.startswith(args.under))
        if args.limit:
            members = members[: args.limit]
        sources = {n: zf.read(n) for n in members}
    size = sum(map(len, sources.values()))
    start = time.perf_counter()
    for src in sources.values():
        with contextlib.suppress(SyntaxError, ValueError, RecursionError, MemoryError):
            ast.parse(src)
    parse_s = time.perf_counter() - start
    start = time.perf_counter()
    modules = scan_sources(sources, None, names)
    scan_s = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    events = sum(len(m.events) + sum(len(f.events) for f in m.functions) for m in modules)
    print(f"{args.wheel.name}: {len(sources)} members, {size / 1e6:.1f} MB of Python, {events} events kept")
    print(f"ast.parse of every member (baseline): {parse_s:8.2f} s")
    print(f"scan_sources:                         {scan_s:8.2f} s  ({scan_s / parse_s:.1f}x the baseline)")
    print(f"peak RSS of the process:              {peak / 2**20:8.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
